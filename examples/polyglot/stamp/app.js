// `stamp`: labels every resource of every app with the intent's `labels`,
// and adds a ConfigMap saying who owns the app and where it runs.
// {"labels": {"team": "payments"}}
import { Refuse, actionController } from "../../../sdk/js/wasmco_controller.js";

export const action = actionController((request) => {
  const labels = request.intent.labels;
  if (typeof labels !== "object" || labels === null) throw new Refuse("the intent needs labels");
  for (const [app, resources] of request.resources) {
    for (const r of resources) request.patch(app, r.kind, r.name, { merge: { metadata: { labels } } });
    for (const cluster of request.placements.get(app) ?? []) {
      const data = { ...labels, cluster: `${cluster.provider}/${cluster.name}` };
      const owner = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: `${app}-owner`, labels }, data };
      request.add(app, owner, [cluster]);
    }
  }
});
