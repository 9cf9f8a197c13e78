// `__NAME__`, a wasmco placement controller in JavaScript.
//
// Its intent takes every app off the clusters that carry one of the labels:
// {"avoidLabels": ["maintenance"]}. Placement controllers run after generic
// placement and see where earlier ones put each app (`request.current`).
import { Refuse, placementController } from "./wasmco_controller.js";

export const placement = placementController((request) => {
  const avoid = request.intent.avoidLabels;
  if (!Array.isArray(avoid)) throw new Refuse("the intent needs avoidLabels, a list of labels");
  for (const [app, placed] of request.current) {
    const off = placed.filter(({ cluster }) => cluster.labels.some((l) => avoid.includes(l)));
    if (off.length) request.unplace(app, off.map(({ cluster }) => cluster));
  }
});
