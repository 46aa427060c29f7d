"""Cost growth of the embedded store: search latency, peak RSS and ingest
pages/s at growing corpus sizes, the ANN dense index vs exact search.

    python bench/cost_growth.py --store DIR [--seed STORE] [--sizes 400,2000,10000]
                                [--questions-n N] [--workers N] [--exact-up-to N] [--json OUT]

The corpus is the dev pages (``wtq/dev/pages``) copied again and again, each
copy with one short HTML comment appended (``<!-- copy K -->``), so every copy
is its own document with the same text (and its unit texts come from the
vector cache, ``home/vector-cache.sqlite``: copies do not re-embed). One store
in ``DIR/home`` grows size by size; ``DIR`` is kept, so a later run reuses
the store and the copies (files already stored are no-ops) and a size not
reached today can be finished tomorrow.

At each size, ingest pages/s of the pages added for it; then, in a fresh
process per dense mode (``PILAR_DENSE_INDEX=ann|exact``), the first search
(opening the model and the dense index: ``open_s``), then over the dev lookup
questions: full search (``Pilar.search``, packet included) p50/p95, dense
top-80 alone (``PageIndex.dense_top``) p50/p95, that process's peak RSS, and
hybrid recall@10 on the gold pages (the originals, copy 0). ``dense_overlap@10``:
how many of exact search's dense top 10 the ANN returns, per question. Exact
search above 2,000 pages holds every vector as float32 (10,000 pages: ~1.8 GB):
pass ``--exact-up-to`` to bound it.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results import write  # noqa: E402
from baselines import OUT, SHARED  # noqa: E402


def _copies(pages: Path, out: Path, k: int) -> Path:
    """Folder of copy ``k`` of ``pages`` (copy 0 is ``pages`` itself)."""
    if k == 0:
        return pages
    folder = out / f"copy-{k:03d}"
    if not (folder / "DONE").exists():
        folder.mkdir(parents=True, exist_ok=True)
        for f in sorted(pages.iterdir()):
            if f.is_file() and f.suffix in (".html", ".htm"):
                (folder / f.name).write_bytes(f.read_bytes() + f"\n<!-- copy {k} -->\n".encode())
        (folder / "DONE").write_text("")
    return folder


def _pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[int(q * (len(s) - 1))] * 1000 if s else float("nan")


def measure(home: Path, questions_tsv: Path, n: int) -> dict:
    """One dense mode (from the environment), in this process."""
    from pilar import Pilar
    from pilar.eval.metrics import recall_at_k
    from pilar.eval.questions import load_questions
    from pilar.eval.run import ranked_ids

    p = Pilar(home=home)
    questions, _ = load_questions(questions_tsv, None)
    stored = {Path(d.uri).stem for d in p.docs() if "copy-" not in d.uri}
    questions = [q for q in questions if q.gold and q.gold[0] in stored][:n]
    t = time.perf_counter()
    p.search(questions[0].question)
    open_s = time.perf_counter() - t
    retriever = p.retriever()
    full, dense, recall, tops = [], [], [], []
    for q in questions:
        t = time.perf_counter()
        p.search(q.question)
        full.append(time.perf_counter() - t)
        vec = p.embedder.query(q.question)
        t = time.perf_counter()
        top = p.index.dense_top(vec, 80)
        dense.append(time.perf_counter() - t)
        tops.append(list(top)[:10])
        recall.append(recall_at_k(ranked_ids(retriever.search(q.question, 10), q.gold),
                                  q.gold, 10))
    out = {"pages": p.index.count(), "questions": len(questions), "open_s": open_s,
           "search_p50_ms": _pct(full, 0.5), "search_p95_ms": _pct(full, 0.95),
           "dense_p50_ms": _pct(dense, 0.5), "dense_p95_ms": _pct(dense, 0.95),
           "recall@10": sum(recall) / len(recall), "dense_top10": tops,
           "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    p.close()
    return out


def _measure_in_child(home: Path, mode: str, args) -> dict:
    env = {**os.environ, "PILAR_DENSE_INDEX": mode}
    proc = subprocess.run([sys.executable, __file__, "--measure", str(home),
                           "--questions", str(args.questions), "--questions-n",
                           str(args.questions_n)], env=env, capture_output=True, text=True)
    if proc.returncode:
        raise SystemExit(f"measure ({mode}) failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", type=Path, default=SHARED / "wtq" / "dev" / "pages")
    ap.add_argument("--questions", type=Path, default=SHARED / "wtq" / "dev" / "questions.tsv")
    ap.add_argument("--store", type=Path, default=OUT / "cost-growth")
    ap.add_argument("--sizes", default="400,2000,10000")
    ap.add_argument("--questions-n", type=int, default=100)
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--exact-up-to", type=int, default=10_000,
                    help="measure exact search only up to this many pages")
    ap.add_argument("--seed", type=Path, default=None,
                    help="start a new --store from this store folder's pilar.sqlite (copied; e.g. "
                         "/work/stores/dev400): copy 0 is not ingested, its vectors not cached")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--measure", type=Path, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure, args.questions, args.questions_n)))
        return

    from pilar import Pilar

    home = args.store / "home"
    if args.seed and not (home / "pilar.sqlite").exists():
        import shutil

        home.mkdir(parents=True, exist_ok=True)
        for name in ("pilar.sqlite", "pilar.sqlite-wal"):
            if (args.seed / name).exists():
                shutil.copy2(args.seed / name, home / name)
    per_copy = sum(1 for f in args.pages.iterdir() if f.suffix in (".html", ".htm"))
    report: dict = {"pages_per_copy": per_copy, "sizes": {}}
    done_copies = 0
    for size in (int(s) for s in args.sizes.split(",")):
        want = -(-size // per_copy)
        folders = [_copies(args.pages, args.store, k) for k in range(done_copies, want)]
        p = Pilar(home=home)
        before = p.index.count()
        t = time.perf_counter()
        for folder in folders:
            p.ingest([folder], workers=args.workers)
        seconds = time.perf_counter() - t
        added = p.index.count() - before
        p.close()  # the ANN index catches up and is saved here (timed with the ingest)
        seconds = time.perf_counter() - t
        done_copies = want
        row = {"ingest_pages": added, "ingest_s": seconds,
               "ingest_pages_per_s": added / seconds if added else None}
        modes = ["ann"] + (["exact"] if size <= args.exact_up_to else [])
        for mode in modes:
            row[mode] = _measure_in_child(home, mode, args)
        if "exact" in row:
            a, e = row["ann"]["dense_top10"], row["exact"]["dense_top10"]
            row["dense_overlap@10"] = statistics.mean(len(set(x) & set(y)) / max(len(y), 1)
                                                      for x, y in zip(a, e))
        for mode in modes:
            row[mode].pop("dense_top10")
        report["sizes"][size] = row
        print(json.dumps({size: row}, indent=1), flush=True)
        write(report, args.json, indent=1)


if __name__ == "__main__":
    main()
