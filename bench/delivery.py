"""Evidence delivery: is every gold answer in the packet? pilar vs flat chunks
vs page-only, side by side, one tokenizer.

    python bench/delivery.py --pages DIR --questions TSV --budgets 3072,4500
                             [--limit N] [--json OUT] [--home DIR] [--gold-page]
                             [--no-ingest]

Any folder of documents and a questions file in the format of
``../shared/data/wtq/dev/questions.tsv`` (read by
:func:`pilar.eval.questions.load_questions`: only ``lookup=1`` questions;
``--limit`` takes a fixed-seed sample). A document is the gold page of a
question when its file stem is the question's ``page_id``.

Methods (``bench/baselines.py``; all with pilar's token counter, so budgets
are comparable): ``flat_chunks`` (512/64), ``page_only``, ``pilar``
(graph linking, unit selection, grouped packing, 10 pages packed), and
``anchor_oracle``: not a method but pilar's ceiling: every gold answer
somewhere in the full text of pilar's ranked pages, with no budget (what a
perfect packer could deliver from the same retrieval; Tessera §4.6).

Figures (:func:`pilar.eval.run.score_question`): ``delivery`` (every gold
answer, normalised, present in the packet text) and ``recall@10`` (the gold
page among the first 10 ranked pages; for chunks, the pages of the first 10
chunks). ``--gold-page`` adds the gold-page setting: the gold page plus 4
random other pages, ranked among themselves, packed at 1,024 tokens.
JSON: ``figures`` (method -> budget -> delivery, recall@10, n) and
``per_question`` (method -> budget -> figure -> one value per question).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.progress import track
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results import write  # noqa: E402
from baselines import (OUT, SHARED, FlatChunks, all_pages, ingest, page_only_packet,  # noqa: E402
                       pilar_search)  # noqa: E402

from pilar import Pilar  # noqa: E402
from pilar.eval.questions import load_questions  # noqa: E402
from pilar.eval.run import Retrieved, score_question  # noqa: E402

METHODS = ("flat_chunks", "page_only", "pilar", "anchor_oracle")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", type=Path, default=SHARED / "wtq" / "dev" / "pages")
    ap.add_argument("--questions", type=Path, default=SHARED / "wtq" / "dev" / "questions.tsv")
    ap.add_argument("--budgets", default="3072,4500")
    ap.add_argument("--limit", type=int)
    ap.add_argument("--home", type=Path, default=OUT / "home-dev")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--gold-page", action="store_true", help="also run the gold-page setting")
    ap.add_argument("--no-ingest", action="store_true",
                    help="use the store in --home as it is (only questions whose gold page it holds)")
    args = ap.parse_args()
    console = Console()
    budgets = [int(b) for b in args.budgets.split(",") if b.strip()]  # "" with --gold-page: gold only

    p = Pilar(home=args.home)
    if not args.no_ingest:
        t0 = time.perf_counter()
        n_files, n_failed = ingest(p, args.pages)
        console.print(f"ingest: {n_files} files ({n_failed} failed) in "
                      f"{time.perf_counter() - t0:.0f} s")
    console.print(f"tokenizer {p.tokens.name}{' (estimate)' if p.tokens.estimate else ''}")
    pages = all_pages(p)
    n_files = len({pg.doc_id for pg in pages.values()})
    page_of: dict[str, str] = {}
    for pid, rec in pages.items():
        page_of.setdefault(Path(rec.source).stem, pid)
    questions, _ = load_questions(args.questions, args.limit)
    questions = [q for q in questions if q.gold and q.gold[0] in page_of]
    flat = FlatChunks(p, cache=OUT)

    # rows[method][label] = one QuestionScore per question
    rows: dict[str, dict[str, list]] = {m: {} for m in METHODS}
    rng = random.Random(13)
    every_page = sorted(page_of.values())

    def score(q, got: dict[str, Retrieved], budget: int, label: str) -> None:
        ranked = got["pilar"].pages
        anchors = p.graph.pages([r.page_id for r in ranked])
        got["anchor_oracle"] = Retrieved(ranked, "\n".join(x.text for x in anchors.values()))
        for m, r in got.items():
            assert p.tokens.count(r.text) <= budget or m == "anchor_oracle", (m, budget)
            rows[m].setdefault(label, []).append(score_question(q, r, budget, 10))

    # each question is ranked once; its packets are built at every budget
    for i, q in enumerate(track(questions if budgets else [], description=f"budgets {args.budgets}")):
        if i % 100 == 0:  # embed the questions in batches (far cheaper than one by one)
            p.embedder.prime([x.question for x in questions[i:i + 100]])
        order = flat.rank(q.question)
        base = p.hybrid.shortlist(q.question)
        ranked = p.retriever().search(q.question, p.settings.top_k)
        for budget in budgets:
            score(q, {"flat_chunks": Retrieved(flat.pages(order), flat.packet(order, budget)),
                      "page_only": Retrieved(base, page_only_packet(p, base, budget)),
                      "pilar": pilar_search(p, q.question, budget, len(ranked), ranked=ranked)},
                  budget, str(budget))
    if args.gold_page:
        budget = 1024
        for i, q in enumerate(track(questions, description="gold page + 4")):
            if i % 100 == 0:
                p.embedder.prime([x.question for x in questions[i:i + 100]])
            gold_pid = page_of[q.gold[0]]
            others = rng.sample([x for x in every_page if x != gold_pid], 4)
            allowed = [gold_pid, *others]
            base = p.hybrid.rank(q.question, allowed)
            score(q, {"flat_chunks": flat.retrieve(q.question, budget, set(allowed)),
                      "page_only": Retrieved(base, page_only_packet(p, base, budget)),
                      "pilar": pilar_search(p, q.question, budget, len(base), ranked=base)},
                  budget, f"gold-{budget}")

    figures: dict[str, dict[str, dict[str, float]]] = {}
    per_question: dict[str, dict[str, dict[str, list[float]]]] = {}
    for m, by in rows.items():
        for label, scores in by.items():
            budget = label.rpartition("-")[2]
            vals = {"delivery": [s.figures[f"delivery@{budget}"] for s in scores],
                    "recall@10": [s.figures["recall@10"] for s in scores]}
            per_question.setdefault(m, {})[label] = vals
            figures.setdefault(m, {})[label] = {
                **{f: round(sum(v) / len(v), 4) for f, v in vals.items()}, "n": len(scores)}

    table = Table(title=f"evidence delivery, {len(questions)} lookup questions, "
                        f"{n_files} documents")
    labels = list(next(iter(figures.values())))
    table.add_column("method")
    for label in labels:
        table.add_column(f"delivery {label}")
        table.add_column(f"recall@10 {label}")
    for m, by in figures.items():
        table.add_row(m, *[f"{by[l][k]:.3f}" for l in labels for k in ("delivery", "recall@10")])
    console.print(table)
    write({"figures": figures, "per_question": per_question, "documents": n_files,
           "methods": {"flat_chunks": flat.name}}, args.json, indent=1)


if __name__ == "__main__":
    main()
