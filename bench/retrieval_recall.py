"""Gold-page recall@k of pilar's hybrid page retrieval vs plain BM25.

    python bench/retrieval_recall.py [--pages DIR] [--questions TSV] [--home DIR]
                                     [--limit N] [--json OUT]

Ingests the pages (a no-op for those already in ``--home``), then for every
lookup question (``lookup=1``) checks whether the gold page (the file named
``<page_id>.*``) is among the top k of (a) pilar's hybrid search and (b) plain
BM25 over the same FTS5 index. Reports recall@1/5/10, MRR and per-ranking
latency medians (packing excluded; see bench/query_latency.py).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from pathlib import Path

from rich.console import Console
from rich.progress import track
from rich.table import Table

from pilar import Pilar

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


def load_questions(path: Path, limit: int | None) -> list[tuple[str, str]]:
    rows = path.read_text(encoding="utf-8").splitlines()
    head = rows[0].split("\t")
    qi, pi, li = head.index("question"), head.index("page_id"), head.index("lookup")
    qs = [(r[qi], r[pi]) for r in (x.split("\t") for x in rows[1:]) if r[li] == "1"]
    if limit and limit < len(qs):
        qs = random.Random(13).sample(qs, limit)
    return qs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", type=Path, default=SHARED / "wtq" / "dev" / "pages")
    ap.add_argument("--questions", type=Path, default=SHARED / "wtq" / "dev" / "questions.tsv")
    ap.add_argument("--home", type=Path, default=Path("bench/out/home-dev"))
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    console = Console()

    p = Pilar(home=args.home)
    t0 = time.perf_counter()
    files = sorted(args.pages.glob("*"))
    failed = [r for r in (p.ingest_file(f) for f in track(files, description="ingest"))
              if r.status == "failed"]
    console.print(f"ingest: {len(files)} files, {len(failed)} failed, "
                  f"{time.perf_counter() - t0:.1f} s")
    stem = {d.doc_id: Path(d.uri).stem for d in p.docs()}

    questions = load_questions(args.questions, args.limit)
    retriever = p.retriever()  # ranking only: the packet is measured by bench/delivery.py
    methods = {"pilar hybrid": [], "bm25 (FTS5)": []}
    latency = {"pilar hybrid": [], "bm25 (FTS5)": []}
    for question, gold in track(questions, description="search"):
        t = time.perf_counter()
        ranked = [stem.get(pg.doc_id) for pg in retriever.search(question, 10)]
        latency["pilar hybrid"].append(time.perf_counter() - t)
        t = time.perf_counter()
        bm = [stem.get(pid.rpartition(":")[0]) for pid in p.index.bm25(question, 10)]
        latency["bm25 (FTS5)"].append(time.perf_counter() - t)
        methods["pilar hybrid"].append(ranked.index(gold) + 1 if gold in ranked else None)
        methods["bm25 (FTS5)"].append(bm.index(gold) + 1 if gold in bm else None)

    report = {}
    table = Table(title=f"gold-page retrieval, {len(questions)} lookup questions, "
                        f"{len(stem)} documents")
    for col in ("method", "recall@1", "recall@5", "recall@10", "MRR@10", "p50 ms", "p95 ms"):
        table.add_column(col)
    for name, ranks in methods.items():
        n = len(ranks)
        rec = {k: sum(1 for r in ranks if r and r <= k) / n for k in (1, 5, 10)}
        mrr = sum(1 / r for r in ranks if r) / n
        lat = sorted(latency[name])
        p50, p95 = statistics.median(lat) * 1000, lat[int(0.95 * (len(lat) - 1))] * 1000
        report[name] = {"recall@1": rec[1], "recall@5": rec[5], "recall@10": rec[10],
                        "mrr@10": mrr, "p50_ms": p50, "p95_ms": p95, "n": n}
        table.add_row(name, f"{rec[1]:.3f}", f"{rec[5]:.3f}", f"{rec[10]:.3f}", f"{mrr:.3f}",
                      f"{p50:.1f}", f"{p95:.1f}")
    console.print(table)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
