// The languages benchmark's placement, in JavaScript: each app of the
// intent goes on the clusters with all of its `allOf` labels and, when it
// has any, one of its `anyOf` labels.
import { placementController } from "./wasmco_controller.js";

export const placement = placementController((request) => {
  for (const app of request.apps) {
    const rule = request.intent[app];
    if (!rule) continue;
    const allOf = rule.allOf ?? [], anyOf = rule.anyOf ?? [];
    const fits = (c) => allOf.every((l) => c.labels.includes(l)) && (!anyOf.length || anyOf.some((l) => c.labels.includes(l)));
    request.place(app, request.clusters.filter(fits));
  }
});
