"""Gold-page recall@k of pilar's hybrid page retrieval vs plain BM25.

    python bench/retrieval_recall.py [--pages DIR] [--questions TSV] [--home DIR]
                                     [--limit N] [--json OUT]

Ingests the pages (a no-op for those already in ``--home``), then for every
lookup question (``lookup=1``) checks whether the gold page (the file named
``<page_id>.*``) is among the top k of (a) pilar's hybrid search and (b) plain
BM25 over the same FTS5 index (questions whose gold page is not stored,
e.g. with ``--no-ingest`` on a partial store, are left out). Reports recall@1/5/10, recall@k for every
k = 1..10 and their mean (PILAR App. C), MRR@10 (all from
:func:`pilar.eval.run.rank_figures`) and per-ranking latency medians
(packing excluded; see bench/query_latency.py). JSON: method -> figures,
plus ``per_question`` (method -> figure -> one value per question).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.progress import track
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
from baselines import OUT, SHARED, all_pages, ingest  # noqa: E402
from results import write  # noqa: E402

from pilar import Pilar  # noqa: E402
from pilar.eval.metrics import RECALL_KS, recall_at_k  # noqa: E402
from pilar.eval.questions import load_questions  # noqa: E402
from pilar.eval.run import rank_figures, ranked_ids  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", type=Path, default=SHARED / "wtq" / "dev" / "pages")
    ap.add_argument("--questions", type=Path, default=SHARED / "wtq" / "dev" / "questions.tsv")
    ap.add_argument("--home", type=Path, default=OUT / "home-dev")
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--no-ingest", action="store_true",
                    help="use the store in --home as it is (only questions whose gold page it holds)")
    args = ap.parse_args()
    console = Console()

    p = Pilar(home=args.home)
    if not args.no_ingest:
        t0 = time.perf_counter()
        n_files, n_failed = ingest(p, args.pages)
        console.print(f"ingest: {n_files} files, {n_failed} failed, "
                      f"{time.perf_counter() - t0:.1f} s")
    pages = all_pages(p)
    n_files = len({pg.doc_id for pg in pages.values()})
    stored = {Path(pg.source).stem for pg in pages.values()}

    questions, _ = load_questions(args.questions, args.limit)
    questions = [q for q in questions if q.gold and q.gold[0] in stored]
    retriever = p.retriever()  # ranking only: the packet is measured by bench/delivery.py
    names = ("pilar hybrid", "bm25 (FTS5)")
    rows: dict[str, list[dict[str, float]]] = {n: [] for n in names}
    latency: dict[str, list[float]] = {n: [] for n in names}
    for q in track(questions, description="search"):
        t = time.perf_counter()
        hybrid = retriever.search(q.question, 10)
        latency["pilar hybrid"].append(time.perf_counter() - t)
        t = time.perf_counter()
        bm = [pages[pid] for pid in p.index.bm25(q.question, 10) if pid in pages]
        latency["bm25 (FTS5)"].append(time.perf_counter() - t)
        for name, ranked in (("pilar hybrid", hybrid), ("bm25 (FTS5)", bm)):
            ids = ranked_ids(ranked, q.gold)
            figs = rank_figures(ids, q.gold, 10)
            figs.update({f"recall@{k}": recall_at_k(ids, q.gold, k) for k in RECALL_KS})
            rows[name].append(figs)

    report: dict = {"per_question": {}, "documents": n_files}
    table = Table(title=f"gold-page retrieval, {len(questions)} lookup questions, "
                        f"{n_files} documents")
    for col in ("method", "recall@1", "recall@5", "recall@10", "recall@1-10", "MRR@10",
                "p50 ms", "p95 ms"):
        table.add_column(col)
    for name in names:
        figs = {f: [r[f] for r in rows[name]] for f in rows[name][0]}
        mean = {f: sum(v) / len(v) for f, v in figs.items()}
        lat = sorted(latency[name])
        p50, p95 = statistics.median(lat) * 1000, lat[int(0.95 * (len(lat) - 1))] * 1000
        report[name] = {**{f.lower(): m for f, m in mean.items()}, "p50_ms": p50, "p95_ms": p95,
                        "n": len(questions)}
        report["per_question"][name] = {**figs, "latency_ms": [x * 1000 for x in latency[name]]}
        table.add_row(name, *[f"{mean[f]:.3f}" for f in ("recall@1", "recall@5", "recall@10",
                                                        "recall@1-10", "MRR@10")],
                      f"{p50:.1f}", f"{p95:.1f}")
    console.print(table)
    write(report, args.json, indent=1)


if __name__ == "__main__":
    main()
