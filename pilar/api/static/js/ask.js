// Ask: a question -> the packet's items in order, each with its citation and
// why its page is there (score parts; for expanded pages the graph path from
// the trace); the reader's answer when the server has a reader. Clicking a
// citation opens its page in the evidence panel.
import { ApiError, call } from "./api.js";
import { clip, fill, h, num } from "./dom.js";
import { openPage } from "./evidence.js";

const BONUSES = ["adjacent", "same_section", "alias", "graph"];

export function setup() {
  document.getElementById("ask-form").addEventListener("submit", (e) => {
    e.preventDefault();
    ask().catch(show);
  });
}

function show(error) {
  fill(document.getElementById("ask-status"), h("span.error", {}, error.message));
}

function request() {
  const value = (id) => document.getElementById(id).value;
  const body = { query: value("question").trim(), budget_tokens: Number(value("budget")),
    k: Number(value("top-k")) };
  if (value("profile")) body.profile = value("profile");
  return body;
}

async function ask() {
  const status = document.getElementById("ask-status");
  const body = request();
  fill(status, "searching…");
  fill(document.getElementById("packet"));
  document.getElementById("answer").hidden = true;
  const result = await call("/v1/search", { method: "POST", json: body });
  const { packet } = result;
  fill(status, `${packet.items.length} items · ${packet.tokens} of ${packet.budget} tokens` +
    `${packet.estimate ? " (estimated)" : ""} · ${result.pages.length} pages ranked`);
  const pages = new Map(result.pages.map((p) => [p.page_id, p]));
  fill(document.getElementById("packet"),
    packet.items.map((item, i) => itemView(item, i + 1, pages.get(pageIdOf(item.citation)))));
  ranked(result.pages);
  answer(body);
}

let noReader = false;

/** The reader's answer, when the server has one configured (after a 501 or
 * 404 the page stops asking). */
async function answer(body) {
  const box = document.getElementById("answer");
  if (noReader) return;
  try {
    const result = await call("/v1/answer", { method: "POST", json: body });
    if (!result.answer) return;
    fill(box, h("strong", {}, "Answer: "), result.answer);
    box.hidden = false;
  } catch (error) {
    if (error instanceof ApiError && [404, 501].includes(error.status)) noReader = true;
    else show(error);
  }
}

const pageIdOf = (c) => `${c.doc_id}:${c.page}`;

/** A support id is `doc_id:page:sN`; its page id is `doc_id:page`. */
export const pageOfSupport = (sid) => sid.slice(0, sid.lastIndexOf(":"));

/** "Title, p. 3 · Section › Sub · table 1 row 4" */
export function citationLabel(c, title) {
  const parts = [`${title || c.doc_id}, p. ${c.page}`];
  if (c.section_path?.length) parts.push(c.section_path.join(" › "));
  if (c.table_index !== null && c.table_index !== undefined) {
    let t = `table ${c.table_index + 1}`;
    if (c.row !== null && c.row !== undefined) t += ` row ${c.row + 1}`;
    if (c.col !== null && c.col !== undefined) t += ` col ${c.col + 1}`;
    parts.push(t);
  }
  return parts.join(" · ");
}

function itemView(item, n, page) {
  const c = item.citation;
  const open = () => {
    document.querySelectorAll("#packet .item.active").forEach((el) => el.classList.remove("active"));
    li.classList.add("active");
    return openPage({ page_id: pageIdOf(c), support_ids: c.support_id ? [c.support_id] : [],
      bbox: c.bbox || undefined }).catch(show);
  };
  const li = h("li.item", { dataset: { n, pageId: pageIdOf(c), supportId: c.support_id || "" } },
    h("div", {},
      h("button.link.cite", { type: "button", onclick: open }, `[${n}] ${citationLabel(c, page?.title)}`),
      page?.trace?.expanded ? h("span.tag.expanded", {}, "expanded") : null,
      page?.trace?.seed ? h("span.tag", {}, "seed") : null,
      h("span.tag", {}, `${item.tokens} tokens`)),
    h("div.text", {}, item.text),
    page ? why(page) : null);
  return li;
}

/** Score parts and graph paths of a ranked page (PILAR §3.4 trace). */
export function why(page) {
  const t = page.trace;
  const parts = [
    h("span.part", {}, `score ${num(page.score)}`),
    h("span.part", {}, `BM25 ${num(page.bm25)}`),
    h("span.part", {}, `dense ${num(page.dense)}`),
    ...BONUSES.filter((b) => typeof t[b] === "number").map((b) => h("span.part", {}, `+${b} ${num(t[b])}`)),
    t.gated?.length ? h("span.part", {}, `gated: ${t.gated.join(", ")}`) : null,
  ];
  const paths = Object.entries(t.paths || {}).map(([kind, steps]) =>
    h("span.path", { dataset: { kind } }, `${kind}: `, steps.map(step)));
  return h("div.why", {}, parts, paths);
}

function step(s) {
  const m = /^(entity|support|page|assertion):(.+)$/.exec(s);
  if (!m) return h("span.edge", {}, ` ${s} `);
  const [, kind, id] = m;
  if (kind === "page" || kind === "support") {
    const target = kind === "page" ? { page_id: id } : { page_id: pageOfSupport(id), support_ids: [id] };
    return h("button.link.step", { type: "button", onclick: () => openPage(target).catch(show) },
      `${kind} ${clip(id, 28)}`);
  }
  return h("span.step", { title: s }, `${kind} ${clip(id, 28)}`);
}

function ranked(pages) {
  const box = document.getElementById("ranked");
  box.hidden = !pages.length;
  fill(box.querySelector("ol"), pages.map((p) => h("li", {},
    h("button.link", { type: "button", onclick: () => openPage({ page_id: p.page_id }).catch(show) },
      `${p.title || p.doc_id}, p. ${p.number}`),
    " ", why(p))));
}
