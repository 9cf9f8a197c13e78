"""`__NAME__`, a wasmco gate controller in Python.

A progressive rollout asks its gates, each time a group of clusters is
Ready, whether the next group goes. This one soaks: the next group goes once
the last has been Ready for the intent's `soakSeconds`; it is held while a
released cluster is unreachable; and the rollout stops when an app failed on
any released cluster: {"soakSeconds": 30}.
"""
from wasmco_controller import Abort, Refuse, Wait, gate

# How soon to ask again while a released cluster is unreachable.
UNREACHABLE_RETRY_MS = 5_000


@gate
def check(request):
    soak = request.intent.get("soakSeconds")
    if not isinstance(soak, int) or isinstance(soak, bool) or soak < 0:
        raise Refuse("the intent needs soakSeconds, a number of seconds")
    for cell in request.cells:
        if cell.failed:
            where = f"{cell.cluster.provider}/{cell.cluster.name}"
            return Abort(f"{cell.app} failed on {where} ({cell.failed} of {cell.resources} resources)")
    if request.unreachable:
        away = request.unreachable[0]
        return Wait(f"{away.provider}/{away.name} is unreachable", UNREACHABLE_RETRY_MS)
    if request.ready_ms < soak * 1000:
        reason = f"group {request.group} Ready for {request.ready_ms // 1000} s of {soak} s"
        return Wait(reason, soak * 1000 - request.ready_ms)
    return None
