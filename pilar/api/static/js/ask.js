// Ask: a question -> the packet's items in order, each with its citation and
// why its page is there (score parts; for expanded pages the graph path from
// the trace); then the reader's answer, streamed as it is generated, its [n]
// citations linked to the packet items shown. Without a reader on the server
// (503) the answer panel says so in one line and the packet stays. Clicking a
// citation opens its page in the evidence panel. The budget and k inputs
// carry the server's bounds (the search tool's schema, GET /v1/tools); an
// empty budget or k is the server's default (PILAR_BUDGET, PILAR_TOP_K). The
// form is not validated by the browser, nor a question cut at a length: what
// is out of bounds is sent, and the server's refusal is shown in its words,
// the same on every face.
import { ApiError, call, events } from "./api.js";
import * as collections from "./collections.js";
import { clip, fill, h, num } from "./dom.js";
import { closePage, openPage } from "./evidence.js";

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

/** Set the budget's and k's bounds from the search tool's parameters (the
 * request model every face uses, with this server's limits). */
export async function limits() {
  const [tool] = await call("/v1/tools");
  const fields = tool.function.parameters.properties;
  const bound = (field) => (fields[field].anyOf || [fields[field]])[0];
  for (const [id, field] of [["budget", "budget_tokens"], ["top-k", "k"]]) {
    const input = document.getElementById(id);
    input.min = bound(field).minimum;
    input.max = bound(field).maximum;
  }
}

function request() {
  const value = (id) => document.getElementById(id).value;
  const body = { query: value("question").trim() };
  if (value("budget")) body.budget_tokens = Number(value("budget"));
  if (value("top-k")) body.k = Number(value("top-k"));
  if (value("profile")) body.profile = value("profile");
  if (collections.chosen()) body.collections = [collections.chosen()];
  return body;
}

async function ask() {
  const status = document.getElementById("ask-status");
  const body = request();
  fill(status, "searching…");
  fill(document.getElementById("packet"));
  closePage(); // the last question's page is not this one's evidence
  const box = document.getElementById("answer");
  box.hidden = true;
  delete box.dataset.state;
  const result = await call("/v1/search", { method: "POST", json: body });
  const { packet } = result;
  fill(status, `${packet.items.length} items · ${packet.tokens} of ${packet.budget} tokens` +
    `${packet.estimate ? " (estimated)" : ""} · ${result.pages.length} pages ranked`);
  const pages = new Map(result.pages.map((p) => [p.page_id, p]));
  const explained = new Set(); // a page's score line once, on its first item
  fill(document.getElementById("packet"), packet.items.map((item, i) => {
    const id = pageIdOf(item.citation);
    const first = !explained.has(id);
    explained.add(id);
    return itemView(item, i + 1, pages.get(id), first);
  }));
  ranked(result.pages);
  await answer(body, packet.items);
}

/** The reader's answer to the search `body`, streamed into the answer panel;
 * `items` are the packet items shown, which its [n] link to. */
async function answer(body, items) {
  const box = document.getElementById("answer");
  const text = h("span.text");
  fill(box, h("strong", {}, "Answer: "), text);
  box.dataset.state = "streaming";
  box.hidden = false;
  const { query, ...options } = body;
  try {
    for await (const { event, data } of events("/v1/answer", { method: "POST",
      json: { question: query, ...options, stream: true } })) {
      if (event === "delta") text.append(data.text);
      else if (event === "answer") finished(box, data, items);
      else if (event === "error") {
        fill(box, h("span.error", {}, data.detail || data.title));
        box.dataset.state = "failed";
      }
    }
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    // 503 without a reader: one line, the packet above stays the evidence
    fill(box, h("span.muted", {}, error.status === 503 ? `No answer: ${error.message}` : error.message));
    box.dataset.state = error.status === 503 ? "no-reader" : "failed";
  }
}

const CITE = /\[\s*(\d+(?:\s*(?:[,;]|-|–)\s*\d+)*)\s*\]/g;

/** The whole answer: its text with each [n] a link to the packet item it
 * cites (matched by support, else by number), then its flags. */
function finished(box, answer, items) {
  const cited = new Map(answer.citations.map((c) => [c.n, c.citation]));
  const parts = [];
  let at = 0;
  for (const m of answer.text.matchAll(CITE)) {
    parts.push(answer.text.slice(at, m.index), "[");
    m[1].split(/\s*[,;]\s*/).forEach((part, i) => {
      if (i) parts.push(", ");
      const n = Number(part);
      const li = Number.isInteger(n) && cited.has(n) ? shownItem(cited.get(n), n, items) : null;
      parts.push(li ? h("button.link.cite-ref", { type: "button", dataset: { n },
        onclick: () => li.querySelector(".cite").click() }, part) : part);
    });
    parts.push("]");
    at = m.index + m[0].length;
  }
  parts.push(answer.text.slice(at));
  fill(box, h("strong", {}, "Answer: "), h("span.text", {}, parts),
    answer.flags.length ? h("span.tag", {}, answer.flags.join(", ").replaceAll("_", " ")) : null);
  box.dataset.state = "done";
}

/** The packet item shown for citation `c` (cited as [n]). */
function shownItem(c, n, items) {
  const same = (it) => it.citation.doc_id === c.doc_id && it.citation.page === c.page &&
    it.citation.support_id === c.support_id;
  const i = same(items[n - 1] || { citation: {} }) ? n - 1 : items.findIndex(same);
  return i < 0 ? null : document.querySelectorAll("#packet .item")[i];
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

/** An item's text as the packet writes it, rendered: `#` heading lines
 * (the group's context path) as headings, runs of `a | b` lines (a table's
 * header and rows) as a table, other lines as paragraphs. */
export function packetText(text) {
  const out = [];
  let rows = null;
  for (const line of text.split("\n")) {
    const heading = /^#{1,6}\s+(.*)$/.exec(line);
    if (line.includes(" | ") && !heading) {
      if (!rows) out.push(h("table.rows", {}, rows = h("tbody")));
      rows.append(h("tr", {}, line.split(" | ").map((cell) => h("td", {}, cell.trim()))));
      continue;
    }
    rows = null;
    if (heading) out.push(h("div.heading", {}, heading[1]));
    else if (line.trim()) out.push(h("p", {}, line));
  }
  return out;
}

function itemView(item, n, page, first = true) {
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
    h("div.text", {}, packetText(item.text)),
    page && first ? why(page) : null);
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
