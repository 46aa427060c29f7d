// Documents: the stored list (paginated), upload by drag and drop or file
// picker with a progress bar fed by the job's server-sent events, per-file
// reasons for failures, delete; the key's recent jobs (GET /v1/jobs), each
// with a Cancel button while it is queued or running.
import { call, events, seg } from "./api.js";
import * as collections from "./collections.js";
import { fill, h } from "./dom.js";

const PAGE = 50;
const ENDED = new Set(["done", "failed", "cancelled"]); // JobState
const CANCELLABLE = new Set(["queued", "running"]); // JobState
const PENDING = new Set(["queued", "running"]); // FileState before an outcome
const RECENT_JOBS = 20;
let shown = 0;

export function setup() {
  const drop = document.getElementById("drop");
  const input = document.getElementById("file-input");
  drop.addEventListener("dragover", (e) => { e.preventDefault(); drop.classList.add("over"); });
  drop.addEventListener("dragleave", () => drop.classList.remove("over"));
  drop.addEventListener("drop", (e) => {
    e.preventDefault();
    drop.classList.remove("over");
    upload([...e.dataTransfer.files]);
  });
  input.addEventListener("change", () => { upload([...input.files]); input.value = ""; });
  document.getElementById("docs-refresh").addEventListener("click", () => refresh());
  document.querySelector("#docs-more button").addEventListener("click", () => refresh(true));
  collections.onChange(() => refresh());
}

/** Reload the document list (or append the next page when `more`); the
 * first load also shows the key's recent jobs. */
export async function refresh(more = false) {
  if (!more && !document.querySelector("#jobs .job")) await recentJobs();
  const body = document.querySelector("#docs tbody");
  const offset = more ? shown : 0;
  const query = new URLSearchParams({ offset, limit: PAGE });
  if (collections.chosen()) query.set("collection", collections.chosen());
  const page = await call(`/v1/documents?${query}`);
  const rows = page.items.map(row);
  if (more) body.append(...rows); else fill(body, rows);
  shown = offset + page.items.length;
  document.getElementById("docs-more").hidden = shown >= page.total;
  if (!body.children.length) fill(body, h("tr", {}, h("td.muted", { colspan: 7 }, "Nothing stored yet.")));
}

function row(doc) {
  const type = doc.media_type === "application/pdf" ? "PDF" : "HTML";
  return h("tr", { dataset: { docId: doc.doc_id } },
    h("td", {}, doc.title || doc.uri),
    h("td", {}, type),
    h("td", {}, String(doc.n_pages)),
    h("td", {}, doc.collection),
    h("td.muted", {}, doc.ingested_at.replace("T", " ").slice(0, 19)),
    h("td", {}, h("code", {}, doc.doc_id)),
    h("td", {}, h("button.quiet", { type: "button", onclick: () => remove(doc) }, "Delete")));
}

async function remove(doc) {
  if (!confirm(`Delete “${doc.title || doc.doc_id}”?`)) return;
  await call(`/v1/documents/${seg(doc.doc_id)}`, { method: "DELETE" });
  await refresh();
}

/** A job's card: title, state line with a Cancel button, progress bar, files. */
function jobCard(title, state) {
  const card = h("div.job", { dataset: { state } },
    h("div.row", {}, h("strong", {}, title), h("span.state.muted", {}, state),
      h("button.quiet.cancel", { type: "button", hidden: true, onclick: () => cancel(card) },
        "Cancel")),
    h("progress", { max: 1, value: 0 }),
    h("ul"));
  return card;
}

const files = (n) => `${n} file${n === 1 ? "" : "s"}`;

/** Show the key's most recent jobs (oldest at the bottom), following those still running. */
async function recentJobs() {
  const page = await call(`/v1/jobs?${new URLSearchParams({ limit: RECENT_JOBS })}`);
  const box = document.getElementById("jobs");
  for (const job of page.items) {
    if (box.querySelector(`[data-job-id="${CSS.escape(job.job_id)}"]`)) continue;
    const card = jobCard(job.kind === "eval" ? "evaluation" : files(job.n_files), job.state);
    box.append(card);
    render(card, job);
    if (!ENDED.has(job.state)) follow(card, job.job_id);
  }
}

/** Cancel the card's job (DELETE /v1/jobs/{id}); its events show the rest. */
async function cancel(card) {
  card.querySelector(".cancel").disabled = true;
  try {
    render(card, await call(`/v1/jobs/${seg(card.dataset.jobId)}`, { method: "DELETE" }));
  } catch (error) {
    fill(card.querySelector(".state"), h("span.error", {}, error.message));
  }
}

/** Upload `list` (File objects) as one job and follow it to the end. */
export async function upload(list) {
  if (!list.length) return;
  const form = new FormData();
  form.append("collection", collections.target()); // before the files: checked first
  for (const f of list) form.append("files", f, f.name);
  const card = jobCard(files(list.length), "uploading");
  fill(card.querySelector(".state"), "uploading…");
  document.getElementById("jobs").prepend(card);
  try {
    const job = await call("/v1/documents", { method: "POST", body: form });
    render(card, job);
    await follow(card, job.job_id);
  } catch (error) {
    card.dataset.state = "failed";
    fill(card.querySelector(".state"), h("span.error", {}, error.message));
  }
  await refresh();
}

/** Follow job `id` through its event stream; the stream ends with the job.
 * Falls back to one GET of the job if the stream closes early. */
async function follow(card, id) {
  let last = null;
  for await (const message of events(`/v1/jobs/${seg(id)}/events`)) {
    if (message.data && typeof message.data === "object" && message.data.job_id) {
      last = message.data;
      render(card, last);
    }
  }
  if (!last || !ENDED.has(last.state)) render(card, await call(`/v1/jobs/${seg(id)}`));
}

/** Draw a job snapshot (the API's Job: {state, files: [{name, status, reason}]}),
 * a JobSummary of the list ({state, n_files, counts}) or the 202 answer
 * before it (no files yet). */
function render(card, job) {
  const files = job.files || [];
  const counts = Object.entries(job.counts || {});
  const total = files.length || job.n_files || 0;
  const done = files.length ? files.filter((f) => !PENDING.has(f.status)).length
    : counts.filter(([s]) => !PENDING.has(s)).reduce((n, [, c]) => n + c, 0);
  const bar = card.querySelector("progress");
  bar.max = Math.max(total, 1);
  bar.value = done;
  card.dataset.state = job.state;
  card.dataset.jobId = job.job_id;
  const button = card.querySelector(".cancel");
  button.hidden = !CANCELLABLE.has(job.state);
  button.disabled = false;
  const failed = files.length ? files.filter((f) => f.status === "failed").length
    : (job.counts || {}).failed || 0;
  fill(card.querySelector(".state"),
    `${job.state} · ${done}/${total}` + (failed ? ` · ${failed} failed` : "") +
    (job.reason && !files.some((f) => f.reason === job.reason) ? ` · ${job.reason}` : ""));
  if (!total) return;
  fill(card.querySelector("ul"), files.map((f) =>
    h(`li.${f.status === "failed" || f.status === "cancelled" ? f.status
      : PENDING.has(f.status) ? "pending" : "done"}`,
      { dataset: { status: f.status } },
      `${f.name}: ${f.status}${f.n_pages ? ` (${f.n_pages} page${f.n_pages > 1 ? "s" : ""})` : ""}`,
      f.reason ? ` — ${f.reason}` : "")));
}
