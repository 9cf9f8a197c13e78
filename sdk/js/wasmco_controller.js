// Write wasmco controllers in JavaScript.
//
//   import { placementController } from "./wasmco_controller.js";
//
//   export const placement = placementController((request) => {
//     const avoid = new Set(request.intent.avoid ?? []);
//     for (const app of request.apps) {
//       request.place(app, request.clusters.filter((c) => !c.labels.some((l) => avoid.has(l))));
//     }
//   });
//
// The request arrives as plain objects (apps by name, clusters with `name`,
// `provider`, `labels` and `kv`); the edits the function makes through it
// are what the controller answers. On the wire it stays the columnar
// contract of wit/controller.wit. Throw `new Refuse("why")` to fail the
// deployment with that message. Build with `wasmco controller build`.
//
// A gate (`gateController`) is asked, each time a rollout's group of
// clusters is Ready, whether the next group goes, and returns `proceed()`,
// `wait("why", retryAfterMs)` or `abort("why")`.

/** Fails the deployment with this message, naming the controller. */
export class Refuse extends Error {}

const decoder = new TextDecoder();

/** The request's strings: one UTF-8 text cut at byte offsets. */
function stringsOf({ data, ends }) {
  const bytes = new TextEncoder().encode(data);
  const cache = new Map();
  return (index) => {
    let text = cache.get(index);
    if (text === undefined) {
      text = decoder.decode(bytes.subarray(index ? ends[index - 1] : 0, ends[index]));
      cache.set(index, text);
    }
    return text;
  };
}

function clustersOf(table, text) {
  const clusters = [];
  for (let i = 0; i < table.name.length; i++) {
    const labels = [];
    for (let j = table.labelStart[i]; j < table.labelStart[i + 1]; j++) labels.push(text(table.labels[j]));
    const kv = {};
    for (let j = table.kvStart[i]; j < table.kvStart[i + 1]; j++) kv[text(table.kvKey[j])] = text(table.kvValue[j]);
    clusters.push({ index: i, provider: text(table.provider[i]), name: text(table.name[i]), labels, kv });
  }
  return clusters;
}

function intentOf(text) {
  if (!text.trim()) return {};
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new Refuse(`the intent is not JSON: ${error.message}`);
  }
}

const indices = (clusters) => Array.from(clusters, (c) => (typeof c === "number" ? c : c.index));

/** In a placement's `groups`, a cluster that came from allOf. */
const NO_GROUP = 0xffffffff;

/** The anyOf group the placement's cluster at `position` came from;
 * undefined for allOf. */
function groupOf(placement, position, text) {
  const group = placement.groups[position];
  return group === undefined || group === NO_GROUP ? undefined : text(group);
}

class PlacementRequest {
  constructor(request) {
    const text = stringsOf(request.strings);
    this.intent = intentOf(request.intent);
    this.apps = Array.from(request.apps, text);
    this.clusters = clustersOf(request.clusters, text);
    /** What earlier placement controllers decided: app -> [{cluster, group}]. */
    this.current = new Map(
      request.current.map((placed) => [
        text(placed.app),
        Array.from(placed.clusters, (cluster, position) => ({
          cluster: this.clusters[cluster],
          group: groupOf(placed, position, text),
        })),
      ]),
    );
    this.edits = [];
  }

  /** Places `app` on `clusters` (cluster objects or indices); with `group`,
   * they are one anyOf group of which the host keeps one. */
  place(app, clusters, group) {
    this.edits.push({ tag: "place", val: { app, clusters: indices(clusters), group } });
  }

  /** Takes `app` off `clusters` an earlier controller placed it on. */
  unplace(app, clusters) {
    this.edits.push({ tag: "unplace", val: { app, clusters: indices(clusters) } });
  }
}

function resourceOf(resource) {
  let manifest;
  return {
    apiVersion: resource.apiVersion,
    kind: resource.kind,
    name: resource.name,
    namespace: resource.namespace,
    get manifest() {
      return (manifest ??= JSON.parse(resource.manifest));
    },
  };
}

const scopeOf = (clusters) =>
  clusters === undefined ? { tag: "all" } : { tag: "only", val: indices(clusters) };

class ActionRequest {
  constructor(request) {
    const text = stringsOf(request.strings);
    this.intent = intentOf(request.intent);
    this.apps = Array.from(request.apps, text);
    this.clusters = clustersOf(request.clusters, text);
    this.placements = new Map(
      request.placements.map((p) => [text(p.app), Array.from(p.clusters, (c) => this.clusters[c])]),
    );
    /** app -> the resources every placed cluster gets. */
    this.resources = new Map(request.resources.map((a) => [text(a.app), a.base.map(resourceOf)]));
    /** app -> Map(cluster index -> its whole resource list), where it differs. */
    this.differing = new Map(
      request.resources.map((a) => [
        text(a.app),
        new Map(a.differing.map((d) => [d.cluster, d.resources.map(resourceOf)])),
      ]),
    );
    this.edits = [];
  }

  /** Adds `manifest` (an object) to `app`, on every cluster or `clusters`. */
  add(app, manifest, clusters) {
    this.edits.push({ tag: "add", val: { app, scope: scopeOf(clusters), manifest: JSON.stringify(manifest) } });
  }

  /** Changes `app`'s `kind`/`name` with `{merge}` (an object) or
   * `{jsonPatch}` (a list of operations). */
  patch(app, kind, name, { merge, jsonPatch, clusters } = {}) {
    if ((merge === undefined) === (jsonPatch === undefined)) throw new Error("give one of merge and jsonPatch");
    const patch =
      merge !== undefined
        ? { tag: "merge-patch", val: JSON.stringify(merge) }
        : { tag: "json-patch", val: JSON.stringify(jsonPatch) };
    this.edits.push({ tag: "patch", val: { app, scope: scopeOf(clusters), target: { kind, name }, patch } });
  }

  /** Removes `app`'s `kind`/`name`, everywhere or from `clusters`. */
  remove(app, kind, name, clusters) {
    this.edits.push({ tag: "remove", val: { app, scope: scopeOf(clusters), target: { kind, name } } });
  }
}

/** What a gate is asked: the rollout so far, between two groups. u64s
 * arrive as BigInt; they are numbers here (milliseconds and revisions fit). */
class GateRequest {
  constructor(request) {
    const text = stringsOf(request.strings);
    this.intent = intentOf(request.intent);
    /** The revision rolled out and the one before (0: none). */
    this.revision = Number(request.revision);
    this.fromRevision = Number(request.fromRevision);
    /** The group that just became Ready (1 is the first), of how many. */
    this.group = request.group;
    this.groups = request.groups;
    /** Every released cluster in group order, and the groups as arrays. */
    this.clusters = clustersOf(request.clusters, text);
    const starts = Array.from(request.groupStart);
    this.released = starts.slice(1).map((end, g) => this.clusters.slice(starts[g], end));
    /** Each app on each released cluster, with its resources' counts. */
    this.cells = request.cells.map((cell) => ({
      app: text(cell.app),
      cluster: this.clusters[cell.cluster],
      resources: cell.resources,
      ready: cell.ready,
      failed: cell.failed,
    }));
    this.unreachable = Array.from(request.unreachable, (i) => this.clusters[i]);
    /** Milliseconds since the group was released, and since it was Ready. */
    this.releasedMs = Number(request.releasedMs);
    this.readyMs = Number(request.readyMs);
  }
}

/** A gate's answer: the next group goes (as far as this gate goes). */
export const proceed = () => ({ tag: "proceed" });

/** A gate's answer: ask again after `retryAfterMs`, and why. */
export const wait = (reason, retryAfterMs) => ({
  tag: "wait",
  val: { reason: String(reason), retryAfterMs: Math.min(Math.max(Math.floor(retryAfterMs), 0), 0xffffffff) },
});

/** A gate's answer: stop the rollout, and why. */
export const abort = (reason) => ({ tag: "abort", val: String(reason) });

function answer(fn, request) {
  try {
    fn(request);
  } catch (error) {
    // A thrown object with `message` is the call's controller-error.
    if (error instanceof Refuse) throw { message: error.message };
    throw error;
  }
  return request.edits;
}

/** The `placement` export of a controller whose logic is `fn(request)`. */
export function placementController(fn) {
  return { place: (request) => answer(fn, new PlacementRequest(request)) };
}

/** The `action` export of a controller whose logic is `fn(request)`. */
export function actionController(fn) {
  return { act: (request) => answer(fn, new ActionRequest(request)) };
}

/** The `gate` export of a controller whose logic is `fn(request)`, which
 * returns `proceed()` (or nothing), `wait(...)` or `abort(...)`. */
export function gateController(fn) {
  return {
    check: (request) => {
      try {
        return fn(new GateRequest(request)) ?? proceed();
      } catch (error) {
        if (error instanceof Refuse) throw { message: error.message };
        throw error;
      }
    },
  };
}
