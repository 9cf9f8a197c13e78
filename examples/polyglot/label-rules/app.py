"""`label-rules`: keeps each app only on the clusters whose labels obey the
intent: all of `allOf`, one of `anyOf` (when given), none of `avoid`.
{"allOf": ["edge"], "avoid": ["east"]}"""
from wasmco_controller import Refuse, placement


@placement
def place(request):
    rules = {key: set(request.intent.get(key, [])) for key in ("allOf", "anyOf", "avoid")}
    if not any(rules.values()):
        raise Refuse("the intent names no labels in allOf, anyOf or avoid")

    def fits(cluster):
        return (
            rules["allOf"] <= cluster.labels
            and (not rules["anyOf"] or rules["anyOf"] & cluster.labels)
            and not rules["avoid"] & cluster.labels
        )

    for app, placed in request.current.items():
        misfits = [cluster for cluster, _group in placed if not fits(cluster)]
        if misfits:
            request.unplace(app, misfits)
