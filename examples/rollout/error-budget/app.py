"""`error-budget`: a gate that spends a rollout's error budget.

Each time a group is Ready it counts, over every cluster released so far,
the app copies that are not Ready (failed, or no longer Ready since their
group went) and those on unreachable clusters. Past the budget the rollout
stops, naming them; within it, the first group (the canary) is still held
until it has run for `canarySeconds`:
{"budgetPercent": 20, "canarySeconds": 5}.
"""
from wasmco_controller import Abort, Refuse, Wait, gate


def _number(intent, key, default):
    value = intent.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise Refuse(f"the intent's {key} must be a number, 0 or more")
    return value


@gate
def check(request):
    budget = _number(request.intent, "budgetPercent", 0)
    canary = _number(request.intent, "canarySeconds", 0)
    away = {(c.provider, c.name) for c in request.unreachable}
    bad = [
        cell
        for cell in request.cells
        if cell.failed or not cell.is_ready or (cell.cluster.provider, cell.cluster.name) in away
    ]
    if request.cells and 100 * len(bad) > budget * len(request.cells):
        named = ", ".join(f"{c.app} on {c.cluster.provider}/{c.cluster.name}" for c in bad[:5])
        spent = 100 * len(bad) // len(request.cells)
        return Abort(
            f"{len(bad)} of {len(request.cells)} app copies not Ready ({spent}% > {budget}%): {named}"
        )
    if request.group == 1 and request.released_ms < canary * 1000:
        left = int(canary * 1000 - request.released_ms)
        return Wait(f"the canary runs {canary} s before the next group", left)
    return None
