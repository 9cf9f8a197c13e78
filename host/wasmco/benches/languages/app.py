"""The languages benchmark's placement, in Python: each app of the intent
goes on the clusters with all of its `allOf` labels and, when it has any,
one of its `anyOf` labels."""
from wasmco_controller import placement


@placement
def place(request):
    for app in request.apps:
        rule = request.intent.get(app)
        if rule is None:
            continue
        all_of, any_of = set(rule.get("allOf", [])), set(rule.get("anyOf", []))
        request.place(
            app,
            [c for c in request.clusters if all_of <= c.labels and (not any_of or any_of & c.labels)],
        )
