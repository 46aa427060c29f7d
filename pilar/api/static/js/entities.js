// Entities: search by name, then an entity's neighbourhood (entities,
// assertions, supports, pages; PILAR §3.3's four layers) as a small
// interactive graph (Cytoscape.js) with the same nodes listed beside it.
// Clicking an entity re-centres; clicking a support or a page opens the page.
import cytoscape from "../vendor/cytoscape-3.35.0/cytoscape.esm.min.js";
import { call, seg } from "./api.js";
import { clip, fill, h } from "./dom.js";
import { openPage } from "./evidence.js";

let cy = null;

export function setup() {
  document.getElementById("entity-form").addEventListener("submit", (e) => {
    e.preventDefault();
    search().catch(show);
  });
}

function show(error) {
  fill(document.getElementById("entity-hits"), h("li.error", {}, error.message));
}

async function search() {
  const q = document.getElementById("entity-q").value.trim();
  const result = await call(`/v1/entities?${new URLSearchParams({ q, limit: 20 })}`);
  const hits = result.items;
  fill(document.getElementById("entity-hits"), hits.length
    ? hits.map((e) => h("li", {}, h("button", { type: "button", dataset: { entityId: e.entity_id },
      onclick: () => neighbourhood(e.entity_id).catch(show) }, `${e.name} `, h("span.tag", {}, e.type))))
    : h("li.muted", {}, "No entity matches."));
}

/** Show the neighbourhood of entity `id` at the chosen depth. */
export async function neighbourhood(id) {
  const depth = document.getElementById("depth").value;
  const hood = await call(`/v1/entities/${seg(id)}/neighborhood?depth=${depth}`);
  const centre = hood.entities.find((e) => e.entity_id === id) || { name: id };
  const box = document.getElementById("hood");
  box.hidden = false;
  box.dataset.entityId = id;
  fill(document.getElementById("hood-title"), `${centre.name} · depth ${depth}`,
    hood.truncated ? h("span.tag.truncated", { title: "an entity has more links than are shown" },
      "cut at the per-entity cap") : null);
  const { nodes, edges } = elements(hood, id);
  draw(nodes, edges);
  lists(hood);
}

const pageLabel = (p) => `${clip(p.title || p.doc_id, 24)} p.${p.number}`;
const supportPage = (s) => `${s.provenance.doc_id}:${s.provenance.page}`;

/** Cytoscape elements from the neighbourhood (NeighborhoodOut): nodes of the
 * four layers; edges SUBJECT_OF, OBJECT, SUPPORTED_BY, MENTIONED_IN, SAME_AS
 * and ON_PAGE (support -> its page), as far as both ends are in it. */
function elements(hood, centre) {
  const nodes = [];
  const edges = [];
  const seen = new Set();
  const add = (id, kind, label, extra = {}) => {
    if (seen.has(id)) return;
    seen.add(id);
    nodes.push({ data: { id, kind, label, ...extra }, classes: id === centre ? `${kind} centre` : kind });
  };
  const link = (source, target, label) => {
    if (source && target) edges.push({ data: { id: `e${edges.length}`, source, target, label } });
  };
  for (const e of hood.entities) add(e.entity_id, "entity", e.name);
  for (const a of hood.assertions) add(a.assertion_id, "assertion", a.predicate,
    { title: `${a.subject} ${a.predicate} ${a.object}` });
  for (const s of hood.supports) add(s.support_id, "support", s.kind, { page_id: supportPage(s) });
  for (const p of hood.pages) add(p.page_id, "page", pageLabel(p), { page_id: p.page_id });
  for (const a of hood.assertions) {
    if (seen.has(a.subject_entity)) link(a.subject_entity, a.assertion_id, "SUBJECT_OF");
    if (seen.has(a.object_entity)) link(a.assertion_id, a.object_entity, "OBJECT");
    for (const sid of a.supports) if (seen.has(sid)) link(a.assertion_id, sid, "SUPPORTED_BY");
  }
  for (const [eid, sid] of hood.mentions) if (seen.has(eid) && seen.has(sid)) link(eid, sid, "MENTIONED_IN");
  for (const x of hood.same_as) if (seen.has(x.source) && seen.has(x.target)) link(x.source, x.target, "SAME_AS");
  for (const s of hood.supports) if (seen.has(supportPage(s))) link(s.support_id, supportPage(s), "ON_PAGE");
  return { nodes, edges };
}

const STYLE = [
  { selector: "node", style: { label: "data(label)", "font-size": 10, "min-zoomed-font-size": 6, "text-valign": "bottom",
    "text-margin-y": 3, width: 16, height: 16, color: "#1d2330", "text-wrap": "ellipsis",
    "text-max-width": 110 } },
  { selector: "node.entity", style: { "background-color": "#2457c5", width: 22, height: 22 } },
  { selector: "node.centre", style: { "border-width": 3, "border-color": "#ffb300", width: 30, height: 30 } },
  { selector: "node.assertion", style: { shape: "round-rectangle", "background-color": "#8a5a00" } },
  { selector: "node.support", style: { shape: "rectangle", "background-color": "#1f8a4c", width: 12, height: 12 } },
  { selector: "node.page", style: { shape: "tag", "background-color": "#c0362c" } },
  { selector: "edge", style: { width: 1, "line-color": "#b8c0cc", "curve-style": "bezier",
    "target-arrow-shape": "triangle", "target-arrow-color": "#b8c0cc", "arrow-scale": 0.6,
    label: "data(label)", "font-size": 7, color: "#8891a0", "text-rotation": "autorotate" } },
];

function draw(nodes, edges) {
  cy?.destroy();
  cy = cytoscape({
    container: document.getElementById("graph"),
    elements: { nodes, edges },
    style: STYLE,
    layout: { name: "cose", animate: false, randomize: false, padding: 16, nodeRepulsion: 6000,
      idealEdgeLength: 50 },
  });
  cy.on("tap", "node", (event) => activate(event.target.data()));
  window.pilar = { ...(window.pilar || {}), graph: cy }; // for the browser console
}

function activate(node) {
  if (node.kind === "entity") return neighbourhood(node.id).catch(show);
  if (node.kind === "support") return openPage({ page_id: node.page_id, support_ids: [node.id] }).catch(show);
  if (node.kind === "page") return openPage({ page_id: node.page_id }).catch(show);
  return null;
}

/** The same neighbourhood as lists (keyboard- and screen-reader-friendly). */
function lists(hood) {
  const col = (title, items) => h("div", {}, h("h3", {}, `${title} (${items.length})`), h("ul", {}, items));
  fill(document.getElementById("hood-lists"),
    col("Entities", hood.entities.map((e) => h("li", {},
      h("button.link", { type: "button", dataset: { entityId: e.entity_id },
        onclick: () => neighbourhood(e.entity_id).catch(show) }, e.name)))),
    col("Assertions", hood.assertions.map((a) =>
      h("li", {}, `${a.subject} — ${a.predicate} — ${a.object}`))),
    col("Supports", hood.supports.map((s) => h("li", {},
      h("button.link", { type: "button", dataset: { supportId: s.support_id },
        onclick: () => openPage({ page_id: supportPage(s), support_ids: [s.support_id] }).catch(show) },
      `${s.kind}: ${clip(s.text, 60)}`)))),
    col("Pages", hood.pages.map((p) => h("li", {},
      h("button.link", { type: "button", dataset: { pageId: p.page_id },
        onclick: () => openPage({ page_id: p.page_id }).catch(show) }, pageLabel(p))))));
}
