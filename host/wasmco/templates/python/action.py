"""`__NAME__`, a wasmco action controller in Python.

Its intent adds labels to every resource of the apps it names (every app
when `apps` is left out): {"labels": {"team": "payments"}, "apps": ["web"]}.
"""
from wasmco_controller import Refuse, action


@action
def act(request):
    labels = request.intent.get("labels")
    if not isinstance(labels, dict):
        raise Refuse("the intent needs labels, an object of label: value")
    apps = request.intent.get("apps", request.apps)
    for app in apps:
        if app not in request.resources:
            raise Refuse(f"app {app!r} is not part of this deployment")
        for resource in request.resources[app]:
            request.patch(app, resource.kind, resource.name, merge={"metadata": {"labels": labels}})
