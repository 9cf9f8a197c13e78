// The status page: polls GET /v2/overview with the token kept in this
// tab's session storage, and draws deployments, clusters and controllers.
"use strict";

const POLL_MS = 2000;
const TOKEN_KEY = "wasmco.token";
let timer = null;
let tab = (location.hash || "#deployments").slice(1);
let openDetail = null; // a function that redraws the open side panel

const $ = (id) => document.getElementById(id);

// Builds an element; children are nodes or text (never parsed as HTML).
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "onclick") node.addEventListener("click", value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

const badge = (state) => el("span", { class: `badge ${state}` }, state);

function age(time) {
  const seconds = Math.max(0, (Date.now() - Date.parse(time)) / 1000);
  if (!isFinite(seconds)) return "";
  if (seconds < 90) return `${Math.round(seconds)}s ago`;
  if (seconds < 5400) return `${Math.round(seconds / 60)}m ago`;
  if (seconds < 172800) return `${Math.round(seconds / 3600)}h ago`;
  return `${Math.round(seconds / 86400)}d ago`;
}

async function api(path) {
  const response = await fetch(path, {
    headers: { Authorization: `Bearer ${sessionStorage.getItem(TOKEN_KEY)}` },
  });
  const body = await response.json().catch(() => ({}));
  // 401: not a token the API takes; 403: a scoped token, and the page
  // reads the whole fleet, which only the admin token may.
  if (response.status === 401 || response.status === 403) {
    throw Object.assign(new Error(body.message || "token refused"), { signedOut: true });
  }
  if (!response.ok) throw new Error(body.message || `${response.status} ${response.statusText}`);
  return body;
}

function showLogin(message) {
  clearTimeout(timer);
  sessionStorage.removeItem(TOKEN_KEY);
  $("login").hidden = false;
  $("tabs").hidden = true;
  $("sign-out").hidden = true;
  $("detail").hidden = true;
  for (const section of document.querySelectorAll(".tab")) section.hidden = true;
  $("login-error").textContent = message || "";
  $("token").focus();
}

function showTab(name) {
  tab = ["deployments", "clusters", "controllers"].includes(name) ? name : "deployments";
  for (const section of document.querySelectorAll(".tab")) section.hidden = section.id !== tab;
  for (const button of document.querySelectorAll("#tabs button")) {
    button.classList.toggle("active", button.dataset.tab === tab);
  }
}

async function poll() {
  clearTimeout(timer);
  try {
    const overview = await api("/v2/overview");
    $("error").hidden = true;
    $("login").hidden = true;
    $("tabs").hidden = false;
    $("sign-out").hidden = false;
    showTab(tab);
    drawDeployments(overview.digs);
    drawClusters(overview.clusters, overview.clusterDeployments || []);
    drawControllers(overview.controllers);
    $("updated").textContent = `updated ${new Date().toLocaleTimeString()}`;
    if (openDetail) openDetail();
  } catch (error) {
    if (error.signedOut) return showLogin(`The server refused the token: ${error.message}`);
    $("error").textContent = `Cannot reach the API: ${error.message}. Retrying…`;
    $("error").hidden = false;
  }
  timer = setTimeout(poll, POLL_MS);
}

function digPath(dig) {
  const e = encodeURIComponent;
  return `/v2/projects/${e(dig.project)}/composite-apps/${e(dig.compositeApp)}/${e(dig.compositeAppVersion)}` +
    `/deployment-intent-groups/${e(dig.name)}`;
}

function emptyDeployments() {
  return el("div", { class: "empty", id: "empty-deployments" },
    el("h2", {}, "No deployments yet"),
    el("p", {}, "Clusters and controllers are registered; deploy an example and watch it here:"),
    el("pre", {}, "wasmco apply -f examples/hello\nwasmco status hello"),
    el("p", {}, "Its apps × clusters grid appears here and turns Ready as the clusters report in."));
}

function drawDeployments(digs) {
  const section = $("deployments");
  if (digs.length === 0) return section.replaceChildren(emptyDeployments());
  section.replaceChildren(...digs.map((dig) => {
    const cells = new Map(dig.cells.map((c) => [`${c.app}\u0000${c.cluster}`, c]));
    const grid = el("table", { class: "grid", "data-dig": dig.key },
      el("tr", {}, el("th", {}, "app \\ cluster"), dig.clusters.map((c) => el("th", {}, c))),
      dig.apps.map((app) => el("tr", {}, el("th", {}, app), dig.clusters.map((cluster) => {
        const cell = cells.get(`${app}\u0000${cluster}`);
        if (!cell) return el("td", {}, "—");
        const state = cell.deployed === "Applied" ? cell.ready : cell.deployed;
        return el("td", {
          class: `cell ${state}`, "data-app": app, "data-cluster": cluster, "data-state": state,
          title: `${cell.readyResources}/${cell.resources} ready, ${cell.failedResources} failed; cluster ${cell.connectivity}`,
          onclick: () => showCell(dig, app, cluster),
        }, state, el("br"), el("span", { class: "muted" }, `${cell.readyResources}/${cell.resources}`),
        cell.connectivity === "Retrying" ? el("div", { class: "Retrying" }, "cluster retrying") : null);
      }))));
    return el("div", { class: "card dig", "data-dig": dig.key },
      el("h2", {}, `${dig.project} / ${dig.compositeApp} ${dig.compositeAppVersion} / ${dig.name} `,
        el("span", { class: `badge ${dig.state}`, "data-role": "dig-state" }, dig.state)),
      el("div", { class: "muted" },
        `revision ${dig.revision} · ${dig.readyCells}/${dig.cells.length} app placements ready`),
      dig.cells.length ? grid : el("p", { class: "muted" }, "Nothing placed (not instantiated yet, or no cluster matched)."),
      dig.rollout ? el("p", { class: dig.rollout.phase === "Stopped" ? "Retrying" : "muted", "data-role": "dig-rollout" },
        `rollout ${dig.rollout.phase}: ${dig.rollout.released} of ${dig.rollout.groups} groups released` +
        (dig.rollout.reason ? ` (${dig.rollout.reason})` : "")) : null,
      ...dig.actions.filter((a) => a.reason).slice(-3).map((a) =>
        el("p", { class: "Retrying", "data-role": "dig-move" }, `${age(a.time)}: ${a.reason}`)),
      el("details", {},
        el("summary", {}, `history (${dig.actions.length} actions)`),
        el("table", {}, el("tr", {}, el("th", {}, "state"), el("th", {}, "revision"), el("th", {}, "when"), el("th", {}, "why")),
          dig.actions.slice().reverse().map((a) =>
            el("tr", {}, el("td", {}, badge(a.state)), el("td", {}, a.revision), el("td", { title: a.time }, age(a.time)), el("td", {}, a.reason || ""))))));
  }));
}

// The resources of one app on one cluster, with the failures' messages.
function showCell(dig, app, cluster) {
  const query = `output=detail&app=${encodeURIComponent(app)}&cluster=${encodeURIComponent(cluster)}`;
  openDetail = async () => {
    try {
      const [deployed, ready] = await Promise.all([
        api(`${digPath(dig)}/status?status=deployed&${query}`),
        api(`${digPath(dig)}/status?status=ready&${query}`),
      ]);
      const readiness = new Map();
      for (const a of ready.apps || []) for (const c of a.clusters) for (const r of c.resources) {
        readiness.set(`${r.GVK.Kind}/${r.name}`, r.readyStatus);
      }
      const rows = [];
      for (const a of deployed.apps || []) for (const c of a.clusters) for (const r of c.resources) {
        const kind = `${r.GVK.Kind}/${r.name}`;
        rows.push(el("tr", {},
          el("td", {}, kind), el("td", {}, badge(r.deployedStatus)),
          el("td", {}, badge(readiness.get(kind) || "Unknown")),
          el("td", {}, r.message ? el("div", { class: "message" }, r.message) : "")));
      }
      $("detail-title").textContent = `${app} on ${cluster}`;
      $("detail-body").replaceChildren(el("p", { class: "muted" }, `${dig.key}, revision ${dig.revision}`),
        rows.length
          ? el("table", { id: "detail-resources" },
            el("tr", {}, el("th", {}, "resource"), el("th", {}, "deployed"), el("th", {}, "ready"), el("th", {}, "message")), rows)
          : el("p", {}, "No resources."));
    } catch (error) {
      $("detail-body").replaceChildren(el("p", { class: "error" }, error.message));
    }
  };
  $("detail").hidden = false;
  openDetail();
}

function drawClusters(clusters, deployments) {
  const section = $("clusters");
  const made = deployments.length ? drawDeploymentsOfClusters(deployments) : [];
  if (clusters.length === 0) {
    return section.replaceChildren(el("div", { class: "empty" }, el("h2", {}, "No clusters registered"),
      el("p", {}, "Register a cluster provider, then each cluster with its kubeconfig (an emcoctl file through wasmco apply, or POST …/cluster-providers/{provider}/clusters), or make one on machines from an Eggo deploy file: wasmco cluster deploy -f deploy.yaml. wasmco dev registers three virtual clusters itself.")),
      ...made);
  }
  section.replaceChildren(el("table", { id: "cluster-table" },
    el("tr", {}, ["cluster", "reachability", "since", "version", "labels", "deployments", "last error"].map((h) => el("th", {}, h))),
    clusters.map((c) => {
      const name = `${c.clusterProvider}+${c.cluster}`;
      return el("tr", { "data-cluster": name, "data-state": c.state },
        el("td", {}, `${c.clusterProvider}/${c.cluster}`),
        el("td", {}, badge(c.state)),
        el("td", { title: c.since || "" }, c.since ? age(c.since) : ""),
        el("td", {}, c.version || ""),
        el("td", {}, c.labels.join(", ")),
        el("td", {}, c.digs.join(", ")),
        el("td", {}, c.lastError ? el("div", { class: "message" }, c.lastError) : ""));
    })), ...made);
}

// Clusters made on machines from Eggo deploy files or requests of the
// machine inventory (or being made, or cleaned up): each machine's phases
// done, the step under way and its last error (or why a request waits),
// and how far rsync is with the cluster's addons.
function drawDeploymentsOfClusters(deployments) {
  const addons = (a) => a ? el("span", { class: a.failed && a.failed.length ? "Failed" : "" },
    `${a.applied}/${a.objects} applied, ${a.ready} ready`, ...(a.failed || []).map((f) => el("div", { class: "message" }, f))) : "";
  const machine = ([name, node]) => el("div", { "data-node": name },
    el("strong", {}, name), " ",
    node.done.length ? el("span", { class: "ok" }, `${node.done.join(" ✓ ")} ✓ `) : "",
    node.phase ? `${node.phase}: ` : "", node.step || "",
    node.error ? el("div", { class: "message" }, node.error) : "");
  // A requested cluster's machines, picked from the inventory.
  const picked = (m) => m ? `${m.masters.join(", ")} (masters) ${m.workers.join(", ")} (workers)` : "";
  return [el("h2", {}, "Cluster deployments"), el("table", { id: "cluster-deployment-table" },
    el("tr", {}, ["deployment", "cluster", "state", "phase", "started", "machines", "addons", "last error"].map((h) => el("th", {}, h))),
    deployments.map((d) => el("tr", { "data-deployment": `${d.clusterProvider}+${d.name}`, "data-state": d.state },
      el("td", {}, `${d.clusterProvider}/${d.name}`),
      el("td", {}, d.cluster),
      el("td", {}, badge(d.state)),
      el("td", {}, d.progress.waiting ? "waiting for machines" : d.progress.finished ? "done" : (d.progress.phase || "")),
      el("td", { title: d.started || "" }, d.started ? age(d.started) : ""),
      el("td", {}, Object.keys(d.progress.nodes).length ? Object.entries(d.progress.nodes).map(machine) : picked(d.machines)),
      el("td", { class: "addons" }, addons(d.addons)),
      el("td", {}, (d.progress.error || d.progress.waiting) ? el("div", { class: "message" }, d.progress.error || d.progress.waiting) : ""))))];
}

function drawControllers(controllers) {
  const section = $("controllers");
  if (controllers.length === 0) {
    return section.replaceChildren(el("div", { class: "empty" }, el("h2", {}, "No controllers yet"),
      el("p", {}, "Upload one: wasmco controller new NAME, then wasmco controller build and upload.")));
  }
  const limits = (l) => l ? Object.entries(l).map(([k, v]) => `${k}=${v}`).join(", ") : "host defaults";
  section.replaceChildren(el("table", { id: "controller-table" },
    el("tr", {}, ["controller", "type", "priority", "limits", "calls", "failures", "recent calls (ms)"].map((h) => el("th", {}, h))),
    controllers.map((c) => el("tr", { "data-controller": c.name },
      el("td", {}, c.name, c.builtIn ? el("span", { class: "muted" }, " (host's own)") : ""),
      el("td", {}, c.type || ""), el("td", {}, c.priority ?? ""), el("td", {}, c.builtIn ? "" : limits(c.limits)),
      el("td", {}, c.calls.calls), el("td", { class: c.calls.failures ? "Failed" : "" }, c.calls.failures),
      el("td", {}, c.calls.recent.slice(-10).map((call) =>
        el("span", { class: call.outcome === "ok" ? "ok" : "Failed", title: `${call.outcome} at ${new Date(call.endedUnixMs).toLocaleTimeString()}` },
          `${call.millis.toFixed(1)} `)))))));
}

$("login").addEventListener("submit", (event) => {
  event.preventDefault();
  sessionStorage.setItem(TOKEN_KEY, $("token").value.trim());
  $("token").value = "";
  poll();
});
$("sign-out").addEventListener("click", () => showLogin(""));
$("detail-close").addEventListener("click", () => { $("detail").hidden = true; openDetail = null; });
for (const button of document.querySelectorAll("#tabs button")) {
  button.addEventListener("click", () => { location.hash = button.dataset.tab; showTab(button.dataset.tab); });
}

if (sessionStorage.getItem(TOKEN_KEY)) poll(); else showLogin("");
