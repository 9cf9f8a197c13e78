// `__NAME__`, a wasmco gate controller in JavaScript.
//
// A progressive rollout asks its gates, each time a group of clusters is
// Ready, whether the next group goes. This one soaks: the next group goes
// once the last has been Ready for the intent's `soakSeconds`; it is held
// while a released cluster is unreachable; and the rollout stops when an app
// failed on any released cluster: {"soakSeconds": 30}.
import { Refuse, abort, gateController, proceed, wait } from "./wasmco_controller.js";

// How soon to ask again while a released cluster is unreachable.
const UNREACHABLE_RETRY_MS = 5000;

export const gate = gateController((request) => {
  const soak = request.intent.soakSeconds;
  if (!Number.isInteger(soak) || soak < 0) throw new Refuse("the intent needs soakSeconds, a number of seconds");
  const failed = request.cells.find((cell) => cell.failed > 0);
  if (failed) {
    const where = `${failed.cluster.provider}/${failed.cluster.name}`;
    return abort(`${failed.app} failed on ${where} (${failed.failed} of ${failed.resources} resources)`);
  }
  const [away] = request.unreachable;
  if (away) return wait(`${away.provider}/${away.name} is unreachable`, UNREACHABLE_RETRY_MS);
  if (request.readyMs < soak * 1000) {
    const reason = `group ${request.group} Ready for ${Math.floor(request.readyMs / 1000)} s of ${soak} s`;
    return wait(reason, soak * 1000 - request.readyMs);
  }
  return proceed();
});
