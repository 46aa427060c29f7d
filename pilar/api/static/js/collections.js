// The collection picker: the collections the key may use (GET /v1/collections).
// A limited key picks among its own, the first (its only one, usually)
// chosen; any other key may also read "all collections". Uploads go to the
// chosen collection ("default" when all are chosen); searches, answers and
// the document list read only the chosen one.
import { call } from "./api.js";
import { fill, h } from "./dom.js";

let listeners = [];

/** The chosen collection, or "" for all the key may read. */
export const chosen = () => document.getElementById("collection").value;

/** The collection an upload goes to. */
export const target = () => chosen() || "default";

/** Call `fn` whenever another collection is chosen. */
export function onChange(fn) { listeners.push(fn); }

export function setup() {
  document.getElementById("collection").addEventListener("change", () => {
    for (const fn of listeners) fn();
  });
}

/** Fill the picker for the current key. */
export async function load() {
  const { collections, limited } = await call("/v1/collections");
  const select = document.getElementById("collection");
  const names = limited ? collections : ["", ...collections];
  fill(select, names.map((c) => h("option", { value: c }, c || "all collections")));
  select.value = limited ? collections[0] : "";
  document.getElementById("collection-picker").hidden = false;
}
