"""`__NAME__`, a wasmco placement controller in Python.

Its intent takes every app off the clusters that carry one of the labels:
{"avoidLabels": ["maintenance"]}. Placement controllers run after generic
placement and see where earlier ones put each app (`request.current`).
"""
from wasmco_controller import Refuse, placement


@placement
def place(request):
    avoid = request.intent.get("avoidLabels")
    if not isinstance(avoid, list):
        raise Refuse("the intent needs avoidLabels, a list of labels")
    for app, placed in request.current.items():
        off = [cluster for cluster, _group in placed if cluster.labels & set(avoid)]
        if off:
            request.unplace(app, off)
