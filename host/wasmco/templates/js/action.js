// `__NAME__`, a wasmco action controller in JavaScript.
//
// Its intent adds labels to every resource of the apps it names (every app
// when `apps` is left out): {"labels": {"team": "payments"}, "apps": ["web"]}.
import { Refuse, actionController } from "./wasmco_controller.js";

export const action = actionController((request) => {
  const labels = request.intent.labels;
  if (typeof labels !== "object" || labels === null) throw new Refuse("the intent needs labels, an object of label: value");
  for (const app of request.intent.apps ?? request.apps) {
    const resources = request.resources.get(app);
    if (!resources) throw new Refuse(`app ${JSON.stringify(app)} is not part of this deployment`);
    for (const r of resources) request.patch(app, r.kind, r.name, { merge: { metadata: { labels } } });
  }
});
