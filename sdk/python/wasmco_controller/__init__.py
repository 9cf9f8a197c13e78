"""Write wasmco controllers in Python.

A controller is one function, decorated::

    from wasmco_controller import placement

    @placement
    def place(request):
        avoid = set(request.intent.get("avoidLabels", []))
        for app in request.apps:
            request.place(app, [c for c in request.clusters if not avoid & c.labels])

The request arrives as plain objects (apps by name, clusters with ``name``,
``provider``, ``labels`` and ``kv``); the edits the function makes through
it are what the controller answers. On the wire it stays the columnar
contract of ``wit/controller.wit``. Raise ``Refuse("why")`` to fail the
deployment with that message.

A gate (``@gate``) is asked, each time a rollout's group of clusters is
Ready, whether the next group goes: it returns ``None`` (or ``Proceed()``)
to let it go, ``Wait("why", retry_after_ms)`` to be asked again later, or
``Abort("why")`` to stop the rollout.

The decorator makes the class componentize-py looks for (``Placement``,
``Action`` or ``Gate``) in the function's module; build with
``wasmco controller build``.
"""

import json
import sys

__all__ = [
    "placement",
    "action",
    "gate",
    "Refuse",
    "Cluster",
    "Resource",
    "Cell",
    "Proceed",
    "Wait",
    "Abort",
]


class Refuse(Exception):
    """Fails the deployment with this message, naming the controller."""


class Cluster:
    """A cluster the deployment may use."""

    __slots__ = ("index", "provider", "name", "labels", "kv")

    def __init__(self, index, provider, name, labels, kv):
        self.index = index
        self.provider = provider
        self.name = name
        self.labels = labels
        self.kv = kv

    def __repr__(self):
        return f"Cluster({self.provider}/{self.name}, labels={sorted(self.labels)})"


class _Strings:
    """The request's strings: one UTF-8 text cut at byte offsets."""

    def __init__(self, strings):
        self._data = strings.data.encode("utf-8")
        self._ends = strings.ends
        self._cache = {}

    def __call__(self, index):
        text = self._cache.get(index)
        if text is None:
            start = self._ends[index - 1] if index else 0
            text = self._data[start : self._ends[index]].decode("utf-8")
            self._cache[index] = text
        return text


def _clusters(table, text):
    clusters = []
    for i in range(len(table.name)):
        labels = frozenset(
            text(label) for label in table.labels[table.label_start[i] : table.label_start[i + 1]]
        )
        kv = {
            text(table.kv_key[j]): text(table.kv_value[j])
            for j in range(table.kv_start[i], table.kv_start[i + 1])
        }
        clusters.append(Cluster(i, text(table.provider[i]), text(table.name[i]), labels, kv))
    return clusters


def _intent(text):
    if not text.strip():
        return {}
    try:
        return json.loads(text)
    except ValueError as error:
        raise Refuse(f"the intent is not JSON: {error}") from None


def _indices(clusters):
    return [c if isinstance(c, int) else c.index for c in clusters]


class PlacementRequest:
    """What a placement controller is asked: where each app goes."""

    def __init__(self, request):
        text = _Strings(request.strings)
        self.intent = _intent(request.intent)
        self.apps = [text(app) for app in request.apps]
        self.clusters = _clusters(request.clusters, text)
        # What earlier placement controllers decided: app -> [(cluster, group)].
        self.current = {
            text(placed.app): [
                (self.clusters[cluster], _group(placed, position, text))
                for position, cluster in enumerate(placed.clusters)
            ]
            for placed in request.current
        }
        self.edits = []

    def place(self, app, clusters, group=None):
        """Places `app` on `clusters` (Cluster objects or indices); with
        `group`, they are one anyOf group of which the host keeps one."""
        from wit_world.exports import placement as wit

        self.edits.append(wit.PlacementEdit_Place(wit.PlaceApp(app, _indices(clusters), group)))

    def unplace(self, app, clusters):
        """Takes `app` off `clusters` an earlier controller placed it on."""
        from wit_world.exports import placement as wit

        self.edits.append(wit.PlacementEdit_Unplace(wit.UnplaceApp(app, _indices(clusters))))


# In a placement's `groups`, a cluster that came from allOf.
_NO_GROUP = 0xFFFFFFFF


def _group(placement, position, text):
    """The anyOf group the placement's cluster at `position` came from; None for allOf."""
    if position >= len(placement.groups) or placement.groups[position] == _NO_GROUP:
        return None
    return text(placement.groups[position])


class Resource:
    """A Kubernetes object an app deploys; `manifest` is the whole object."""

    __slots__ = ("api_version", "kind", "name", "namespace", "_json", "_manifest")

    def __init__(self, resource):
        self.api_version = resource.api_version
        self.kind = resource.kind
        self.name = resource.name
        self.namespace = resource.namespace
        self._json = resource.manifest
        self._manifest = None

    @property
    def manifest(self):
        if self._manifest is None:
            self._manifest = json.loads(self._json)
        return self._manifest

    def __repr__(self):
        return f"Resource({self.kind}/{self.name})"


class ActionRequest:
    """What an action controller is asked: how each app's resources change."""

    def __init__(self, request):
        text = _Strings(request.strings)
        self.intent = _intent(request.intent)
        self.apps = [text(app) for app in request.apps]
        self.clusters = _clusters(request.clusters, text)
        self.placements = {
            text(placed.app): [self.clusters[cluster] for cluster in placed.clusters]
            for placed in request.placements
        }
        # app -> the resources every placed cluster gets.
        self.resources = {
            text(app.app): [Resource(r) for r in app.base] for app in request.resources
        }
        # app -> {cluster index: its whole resource list}, where it differs.
        self.differing = {
            text(app.app): {
                d.cluster: [Resource(r) for r in d.resources] for d in app.differing
            }
            for app in request.resources
        }
        self.edits = []

    @staticmethod
    def _scope(clusters):
        from wit_world.exports import action as wit

        if clusters is None:
            return wit.ClusterScope_All()
        return wit.ClusterScope_Only(_indices(clusters))

    def add(self, app, manifest, clusters=None):
        """Adds `manifest` (a dict) to `app`, on every cluster or `clusters`."""
        from wit_world.exports import action as wit

        self.edits.append(
            wit.ActionEdit_Add(wit.AddResource(app, self._scope(clusters), json.dumps(manifest)))
        )

    def patch(self, app, kind, name, merge=None, json_patch=None, clusters=None):
        """Changes `app`'s `kind`/`name` with a merge patch (a dict) or a
        JSON patch (a list of operations)."""
        from wit_world.exports import action as wit
        from wit_world.imports import types

        if (merge is None) == (json_patch is None):
            raise ValueError("give one of merge= and json_patch=")
        patch = (
            wit.Patch_MergePatch(json.dumps(merge))
            if merge is not None
            else wit.Patch_JsonPatch(json.dumps(json_patch))
        )
        target = types.ResourceRef(kind, name)
        self.edits.append(
            wit.ActionEdit_Patch(wit.PatchResource(app, self._scope(clusters), target, patch))
        )

    def remove(self, app, kind, name, clusters=None):
        """Removes `app`'s `kind`/`name`, everywhere or from `clusters`."""
        from wit_world.exports import action as wit
        from wit_world.imports import types

        target = types.ResourceRef(kind, name)
        self.edits.append(
            wit.ActionEdit_Remove(wit.RemoveResource(app, self._scope(clusters), target))
        )


class Cell:
    """One app on one released cluster: its resources there, and how many
    are Ready and Failed."""

    __slots__ = ("app", "cluster", "resources", "ready", "failed")

    def __init__(self, app, cluster, resources, ready, failed):
        self.app = app
        self.cluster = cluster
        self.resources = resources
        self.ready = ready
        self.failed = failed

    @property
    def is_ready(self):
        return self.ready == self.resources

    def __repr__(self):
        where = f"{self.cluster.provider}/{self.cluster.name}"
        return f"Cell({self.app} on {where}: {self.ready}/{self.resources} Ready, {self.failed} Failed)"


class GateRequest:
    """What a gate is asked: the rollout so far, between two groups."""

    def __init__(self, request):
        text = _Strings(request.strings)
        self.intent = _intent(request.intent)
        # The revision rolled out and the one before (0: none).
        self.revision = request.revision
        self.from_revision = request.from_revision
        # The group that just became Ready (1 is the first), of how many.
        self.group = request.group
        self.groups = request.groups
        # Every released cluster, in group order, and the groups as lists.
        self.clusters = _clusters(request.clusters, text)
        starts = request.group_start
        self.released = [
            self.clusters[starts[g] : starts[g + 1]] for g in range(len(starts) - 1)
        ]
        self.cells = [
            Cell(text(c.app), self.clusters[c.cluster], c.resources, c.ready, c.failed)
            for c in request.cells
        ]
        self.unreachable = [self.clusters[i] for i in request.unreachable]
        # Milliseconds since the group was released, and since it was Ready.
        self.released_ms = request.released_ms
        self.ready_ms = request.ready_ms


class Proceed:
    """A gate's answer: the next group goes (as far as this gate goes)."""


class Wait:
    """A gate's answer: ask again after `retry_after_ms`, and why."""

    def __init__(self, reason, retry_after_ms):
        self.reason = reason
        self.retry_after_ms = retry_after_ms


class Abort:
    """A gate's answer: stop the rollout, and why."""

    def __init__(self, reason):
        self.reason = reason


def _verdict(answer):
    from wit_world.exports import gate as wit

    if answer is None or isinstance(answer, Proceed) or answer is Proceed:
        return wit.Verdict_Proceed()
    if isinstance(answer, Wait):
        after = min(max(int(answer.retry_after_ms), 0), 0xFFFFFFFF)
        return wit.Verdict_Wait(wit.WaitFor(str(answer.reason), after))
    if isinstance(answer, Abort):
        return wit.Verdict_Abort(str(answer.reason))
    raise Refuse(f"a gate answers None, Proceed(), Wait(...) or Abort(...), not {answer!r}")


def _answer(function, request):
    from componentize_py_types import Err
    from wit_world.imports import types

    try:
        function(request)
    except Refuse as refusal:
        raise Err(types.ControllerError(str(refusal))) from None
    return request.edits


def placement(function):
    """Makes `function(request)` this module's placement controller."""
    from wit_world import exports

    class Placement(exports.Placement):
        def place(self, request):
            return _answer(function, PlacementRequest(request))

    sys.modules[function.__module__].Placement = Placement
    return function


def action(function):
    """Makes `function(request)` this module's action controller."""
    from wit_world import exports

    class Action(exports.Action):
        def act(self, request):
            return _answer(function, ActionRequest(request))

    sys.modules[function.__module__].Action = Action
    return function


def gate(function):
    """Makes `function(request)` this module's gate controller; it returns
    None or Proceed(), Wait(reason, retry_after_ms) or Abort(reason)."""
    from componentize_py_types import Err
    from wit_world import exports
    from wit_world.imports import types

    class Gate(exports.Gate):
        def check(self, request):
            try:
                return _verdict(function(GateRequest(request)))
            except Refuse as refusal:
                raise Err(types.ControllerError(str(refusal))) from None

    sys.modules[function.__module__].Gate = Gate
    return function
