// The evidence panel: one page with its cited supports marked. PDF pages are
// the server's rendering (/v1/pages/{id}/image?highlight=...) with one DOM
// box per cited support laid over it (positions in percent of the page, from
// the bbox in PDF points, so they follow the image's size); HTML pages are
// their supports in document order with the cited ones marked, each with its
// section path and, for table rows and cells, the column headers.
import { blobUrl, call, seg } from "./api.js";
import { fill, h } from "./dom.js";

const SUPPORTS_SLICE = 1000; // the most /v1/pages/{id} returns at once
const panel = () => document.getElementById("evidence");
let imageUrl = null;
let opened = 0;

export function setup() {
  document.getElementById("ev-close").addEventListener("click", closePage);
}

/** Close the panel and drop its page (a page still loading is not shown). */
export function closePage() {
  opened++;
  const pane = panel();
  pane.hidden = true;
  delete pane.dataset.pageId;
  delete pane.dataset.state;
  for (const id of ["ev-body", "ev-title", "ev-meta", "ev-nav"]) fill(document.getElementById(id));
}

/**
 * Open a page. `target`: {page_id, support_ids?: [id...], bbox?: [x0,y0,x1,y1]
 * (a table cell's box, in PDF points, drawn in place of its support's)}.
 */
export async function openPage(target) {
  const ticket = ++opened;
  const pane = panel();
  pane.hidden = false;
  pane.dataset.state = "loading";
  const body = document.getElementById("ev-body");
  fill(body, h("p.muted", {}, "loading…"));
  const page = await wholePage(target.page_id);
  if (ticket !== opened) return; // a later click won
  const cited = new Set(target.support_ids || []);
  const { supports } = page;
  fill(document.getElementById("ev-title"), page.title || page.doc_id);
  fill(document.getElementById("ev-meta"),
    `page ${page.number}${page.n_pages ? ` of ${page.n_pages}` : ""} · ${page.page_id}`);
  pane.dataset.pageId = page.page_id;
  pane.dataset.page = page.number;
  navigation(page);
  const marked = supports.filter((s) => cited.has(s.support_id));
  const context = contextOf(marked, page);
  if (page.width > 0) {
    await pdfPage(body, page, marked, target, context, ticket);
  } else {
    htmlPage(body, page, supports, cited, context);
  }
  pane.dataset.state = "ready";
  // bring the first mark into view inside the panel (the window stays put)
  pane.scrollTop = 0;
  const mark = body.querySelector(".cited, .box");
  if (mark) {
    const below = mark.getBoundingClientRect().top - pane.getBoundingClientRect().top;
    pane.scrollTop = Math.max(0, below - pane.clientHeight / 3);
  }
}

/** The page with every support: /v1/pages/{id} serves them a slice at a
 * time (`limit` from `offset`; `next_offset` null on the last slice). */
async function wholePage(pageId) {
  const path = `/v1/pages/${seg(pageId)}?limit=${SUPPORTS_SLICE}`;
  const page = await call(path);
  while (page.next_offset !== null) {
    const more = await call(`${path}&offset=${page.next_offset}`);
    page.supports.push(...more.supports);
    Object.assign(page.headers, more.headers);
    page.next_offset = more.next_offset;
  }
  return page;
}

function navigation(page) {
  const nav = document.getElementById("ev-nav");
  const go = (n) => () => openPage({ page_id: `${page.doc_id}:${n}` });
  fill(nav,
    page.number > 1 ? h("button.quiet", { type: "button", onclick: go(page.number - 1) }, "‹ previous page") : null,
    page.n_pages && page.number < page.n_pages
      ? h("button.quiet", { type: "button", onclick: go(page.number + 1) }, "next page ›") : null);
}

async function pdfPage(body, page, marked, target, context, ticket) {
  const ids = marked.map((s) => s.support_id);
  const query = ids.length ? `?highlight=${ids.map(encodeURIComponent).join(",")}` : "";
  const url = await blobUrl(`/v1/pages/${seg(page.page_id)}/image${query}`);
  if (ticket !== opened) { URL.revokeObjectURL(url); return; }
  if (imageUrl) URL.revokeObjectURL(imageUrl);
  imageUrl = url;
  const img = h("img", { alt: `page ${page.number}`, dataset: { page: page.number } });
  const loaded = new Promise((resolve, reject) => { img.onload = resolve; img.onerror = reject; });
  img.src = url;
  const boxes = marked.map((s) => {
    const bbox = (marked.length === 1 && target.bbox) || s.provenance.bbox;
    return bbox ? box(bbox, page, s) : null;
  });
  fill(body, context, h("div.sheet", {}, img, boxes));
  await loaded;
}

function box([x0, y0, x1, y1], page, support) {
  const pct = (v, of) => `${(100 * v / of).toFixed(4)}%`;
  return h("div.box", {
    title: `${support.kind}: ${support.text}`,
    dataset: { supportId: support.support_id, bbox: [x0, y0, x1, y1].join(",") },
    style: { left: pct(x0, page.width), top: pct(y0, page.height),
      width: pct(x1 - x0, page.width), height: pct(y1 - y0, page.height) },
  });
}

function htmlPage(body, page, supports, cited, context) {
  const list = supports.length ? supports : [{ support_id: "", kind: "paragraph", text: page.text }];
  fill(body, context, h("div.html-page", {}, list.map((s) =>
    h(`div.sup.${s.kind}${cited.has(s.support_id) ? ".cited" : ""}`,
      { dataset: { supportId: s.support_id }, title: s.provenance?.section_path.join(" › ") },
      s.text))));
}

/** Section path and table headers of the cited supports, as a <dl>. */
function contextOf(marked, page) {
  if (!marked.length) return null;
  const s = marked[0];
  const p = s.provenance;
  const headers = headersOf(s, page);
  return h("dl.context", {},
    h("dt", {}, "cited"), h("dd", {}, `${s.kind}${marked.length > 1 ? ` (+${marked.length - 1} more)` : ""}`),
    p.section_path.length ? [h("dt", {}, "section"), h("dd", {}, p.section_path.join(" › "))] : null,
    headers.length ? [h("dt", {}, "table headers"), h("dd", {}, headers.join(" | "))] : null);
}

/** Column headers of a table-row support (empty header cells left out). */
function headersOf(support, page) {
  return (page.headers[support.support_id] || []).filter(Boolean);
}
