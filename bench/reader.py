"""Answers from the reader: EM, ANLS and citation support of pilar packets vs
flat chunks at the same budget, in the open setting and the gold-page
setting, side by side in one run (PILAR App. C.1, H.2-H.3).

    PILAR_LLM_BASE_URL=http://127.0.0.1:PORT/v1 \\
    python bench/reader.py --home STORE [--questions TSV] [--limit 100]
                           [--budget 1024] [--json OUT]

Each answer's figures are appended to ``OUT.rows.jsonl`` as it comes (a
run of a few hundred answers on a CPU takes hours): a run cut short and
started again with the same arguments skips the answers already there.

``STORE`` is a pilar home holding the pages the questions ask about (e.g. a
copy of a 400-page dev store: never a store others use, opening it may
migrate it). Questions are ``lookup=1`` rows of a questions file in the
format of ``../shared/data/wtq/dev/questions.tsv`` whose gold page is in the
store, a fixed-seed sample of ``--limit``; a document is a question's gold page when its file stem is the
question's ``page_id``. The reader is whatever ``PILAR_LLM_*`` /
``PILAR_READER_*`` configure: a stronger model on a GPU reproduces the run
with one setting changed (e.g. ``PILAR_LLM_BASE_URL`` of a vLLM server).

Methods, each packet numbered and fitted to the budget by the same reader
code (:meth:`pilar.reader.Reader.context`), so the budgets are equal:
- ``flat_chunks``: 512-token chunks (64 overlap) of page text, hybrid scored,
  greedy (the alternative of bench/delivery.py, :class:`delivery.FlatChunks`);
- ``pilar``: ``Pilar.search``'s packet (graph linking, units, grouped packing).
Settings: ``open`` (all pages) and ``gold`` (the gold page plus 4 random other
pages, ranked among themselves). Figures (pilar.eval.metrics): ``EM`` and
``ANLS`` (threshold 0.5) of the short answer, ``cite`` (citation support: the
cited items hold the gold answer), ``delivery`` (the packet holds it),
``no_cite`` and ``nie`` (shares flagged no_citation / not_in_evidence), and
the median seconds per answer.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.progress import track
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
from baselines import OUT, FlatChunks  # noqa: E402 - the sibling module
from results import write  # noqa: E402

from pilar import Pilar  # noqa: E402
from pilar.errors import LLMError  # noqa: E402
from pilar.eval.metrics import answer_figures, delivered  # noqa: E402
from pilar.eval.questions import load_questions  # noqa: E402
from pilar.model import Citation, Packet, PacketItem  # noqa: E402
from pilar.parts import split_page_id  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
METHODS = ("flat_chunks", "pilar")


def flat_packet(flat: FlatChunks, order: list[int], budget: int, sources: dict[str, str]
                ) -> Packet:
    """The flat-chunk packet of :meth:`FlatChunks.packet` as items citing
    their page (chunks have no finer provenance)."""
    items, used = [], 0
    for i in order:
        page_id, text = flat.meta[i]
        cost = flat.counter.count(text) + 1
        if used + cost > budget:
            continue
        doc_id, number = split_page_id(page_id)
        items.append(PacketItem(text=text, tokens=cost - 1, page_id=page_id, citation=Citation(
            doc_id=doc_id, source=sources.get(doc_id, ""), page=number)))
        used += cost
        if budget - used < 32:
            break
    return Packet(text="\n".join(it.text for it in items), items=items, budget=budget,
                  tokens=used, tokenizer=flat.counter.name, estimate=flat.counter.estimate)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--home", type=Path, required=True, help="a pilar store (a copy)")
    ap.add_argument("--questions", type=Path, default=SHARED / "wtq" / "dev" / "questions.tsv")
    ap.add_argument("--limit", type=int, default=100)
    ap.add_argument("--budget", type=int, default=1024)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    console = Console()

    p = Pilar(home=args.home)
    reader = p.reader
    docs = p.docs()
    sources = {d.doc_id: d.uri for d in docs}
    page_of = {Path(d.uri).stem: f"{d.doc_id}:1" for d in docs}
    questions = [q for q in load_questions(args.questions)[0] if q.gold and q.gold[0] in page_of]
    if args.limit and args.limit < len(questions):  # a fixed sample of the stored pages' questions
        questions = random.Random(13).sample(questions, args.limit)
    flat = FlatChunks(p, cache=OUT)
    console.print(f"{len(questions)} questions, {len(docs)} documents, reader "
                  f"{reader.client.model} at {reader.client.endpoint.base_url}, budget "
                  f"{args.budget} ({p.tokens.name}{', estimate' if p.tokens.estimate else ''})")

    all_pages = sorted(page_of.values())
    rows: dict[tuple[str, str], list[dict]] = {}
    done: dict[tuple[str, str, str], dict] = {}
    log = args.json.with_suffix(".rows.jsonl") if args.json else None
    if log:
        log.parent.mkdir(parents=True, exist_ok=True)
    if log and log.exists():  # answers of an earlier run cut short (failed ones are retried)
        for line in log.read_text().splitlines():
            r = json.loads(line)
            if r.get("budget") == args.budget and not r["failed"]:
                done[(r["setting"], r["method"], r["qid"])] = r
    for q in track(questions, description="questions"):  # both settings per question
        for setting in ("open", "gold"):
            question, answers, gold_pid = q.question, list(q.answers), page_of[q.gold[0]]
            if all((setting, m, q.qid) in done for m in METHODS):
                for m in METHODS:
                    rows.setdefault((setting, m), []).append(done[(setting, m, q.qid)])
                continue
            if setting == "open":
                order = flat.rank(question)
                ranked = p.retriever().search(question, p.settings.top_k)
            else:
                rng = random.Random(f"13-{q.qid}")  # the same 4 other pages in every run
                allowed = [gold_pid, *rng.sample([x for x in all_pages if x != gold_pid], 4)]
                order = flat.rank(question, set(allowed))
                ranked = p.hybrid.rank(question, allowed)
            packets = {"flat_chunks": flat_packet(flat, order, args.budget, sources),
                       "pilar": p.pack(question, ranked, args.budget)}
            for method, packet in packets.items():
                if (setting, method, q.qid) in done:
                    rows.setdefault((setting, method), []).append(done[(setting, method, q.qid)])
                    continue
                context = reader.context(packet, args.budget)
                t0 = time.perf_counter()
                try:
                    ans = reader.answer(question, context)
                except LLMError as exc:
                    console.print(f"[red]reader failed[/] ({method}, {question!r}): {exc}")
                    row = {"failed": 1}
                else:
                    figures = answer_figures(ans.short, answers, [c.text for c in ans.citations])
                    row = {"em": figures["EM"], "anls": figures["ANLS"],
                           "cite": figures["citation support"],
                           "delivery": float(delivered(answers, context.text)),
                           "no_cite": float("no_citation" in ans.flags),
                           "nie": float(ans.not_in_evidence),
                           "seconds": time.perf_counter() - t0, "failed": 0,
                           "short": ans.short}
                rows.setdefault((setting, method), []).append(row)
                if log:
                    with log.open("a") as f:
                        f.write(json.dumps({"setting": setting, "method": method, "qid": q.qid,
                                            "budget": args.budget, **row}) + "\n")

    figures: dict[str, dict[str, dict[str, float]]] = {}
    for (setting, method), rs in sorted(rows.items(), key=lambda kv: kv[0][0] != "open"):
        ok = [r for r in rs if not r["failed"]]
        fig = {k: round(sum(r[k] for r in ok) / len(rs), 4)
               for k in ("em", "anls", "cite", "delivery", "no_cite", "nie")} if ok else {}
        fig["median_s"] = round(statistics.median(r["seconds"] for r in ok), 2) if ok else 0.0
        fig["n"], fig["failed"] = len(rs), len(rs) - len(ok)
        figures.setdefault(setting, {})[method] = fig
    table = Table(title=f"reader answers, {len(questions)} lookup questions, budget "
                        f"{args.budget}, {reader.client.model}")
    for col in ("setting", "method", "EM", "ANLS", "cite", "delivery", "no_cite", "nie",
                "median s", "failed"):
        table.add_column(col)
    for setting, by in figures.items():
        for method in METHODS:
            f = by.get(method, {})
            table.add_row(setting, method, *[f"{f.get(k, 0):.3f}" for k in (
                "em", "anls", "cite", "delivery", "no_cite", "nie")],
                f"{f.get('median_s', 0):.2f}", str(f.get("failed", 0)))
    console.print(table)
    write({"budget": args.budget, "model": reader.client.model, "questions": len(questions),
           "figures": figures}, args.json)


if __name__ == "__main__":
    main()
