"""Query embedding on ONNX Runtime against sentence-transformers (issue 33).

    python bench/query_encoder.py [--questions TSV] [--n N] [--home STORE]
                                  [--searches N] [--json OUT]

Part 1, the encoder: ``--n`` WTQ dev questions (fixed-seed sample), each
embedded by sentence-transformers (PyTorch, one thread) and by ONNX Runtime
(one intra-op and one inter-op thread), interleaved in one run (the order
alternates per question, so load on the machine falls on both alike), after
10 warm-up questions each; the query-vector cache is bypassed. Reports p50,
p95 and mean (ms) of each, the p50 ratio, and the minimum and median cosine
between the two vectors of a question.

Part 2, with ``--home`` (a store that already holds the corpus, e.g. the WTQ
dev pages): ``Pilar.search`` p50/p95 with ``PILAR_QUERY_ENCODER=torch`` (as
on main before this change: torch with its default threads) and ``onnx``, two
facades on the same store in one process, interleaved per question, each
question run once untimed first (warm page cache); the query-vector cache is
emptied before every timed search. The store is only read: the vector cache
is off and the ONNX export goes to a temporary ``PILAR_MODELS_DIR``.
Reports the 1-minute load average before and after each part.
"""

from __future__ import annotations

import argparse
import csv
import os
import random
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from results import emit

from pilar import Pilar
from pilar.config import Settings
from pilar.retrieval.embeddings import Embedder

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


def summary(ms: list[float]) -> dict[str, float]:
    """``{"p50_ms", "p95_ms", "mean_ms", "n"}`` of the timings ``ms``."""
    s = sorted(ms)
    return {"p50_ms": statistics.median(s), "p95_ms": s[int(0.95 * (len(s) - 1))],
            "mean_ms": statistics.fmean(s), "n": len(s)}


def encoders(questions: list[str], models_dir: Path) -> dict:
    """Part 1 (see the module docstring)."""
    import torch

    torch.set_num_threads(1)
    st = Embedder()
    onnx = Embedder(onnx_dir=models_dir).query_encoder
    if onnx is None:
        raise SystemExit("the ONNX query encoder could not be opened (see the warning above)")
    runs = {"torch": lambda q: st._encode([q], None)[0], "onnx": lambda q: onnx.encode([q])[0]}
    for q in questions[:10]:
        for run in runs.values():
            run(q)
    ms: dict[str, list[float]] = {name: [] for name in runs}
    cosines = []
    load_before = os.getloadavg()[0]
    for i, q in enumerate(questions):
        vecs = {}
        for name in (("torch", "onnx") if i % 2 == 0 else ("onnx", "torch")):
            t = time.perf_counter()
            vecs[name] = runs[name](q)
            ms[name].append((time.perf_counter() - t) * 1000)
        a, b = vecs["torch"], vecs["onnx"]
        cosines.append(float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b))))
    out = {name: summary(v) for name, v in ms.items()}
    out["p50_ratio"] = out["torch"]["p50_ms"] / out["onnx"]["p50_ms"]
    out["min_cosine"] = min(cosines)
    out["median_cosine"] = statistics.median(cosines)
    out["torch_threads"] = torch.get_num_threads()
    out["load"] = [load_before, os.getloadavg()[0]]
    return out


def searches(home: Path, questions: list[str], models_dir: Path) -> dict:
    """Part 2 (see the module docstring)."""
    facades = {enc: Pilar(home=home, create=False, settings=Settings(
        query_encoder=enc, models_dir=models_dir, embedding_cache=False))
        for enc in ("torch", "onnx")}
    for q in questions:
        for p in facades.values():
            p.search(q)
    if facades["onnx"].embedder.query_encoder is None:
        raise SystemExit("the ONNX query encoder could not be opened (see the warning above)")
    import torch

    ms: dict[str, list[float]] = {name: [] for name in facades}
    load_before = os.getloadavg()[0]
    for i, q in enumerate(questions):
        for name in (("torch", "onnx") if i % 2 == 0 else ("onnx", "torch")):
            p = facades[name]
            p.embedder._queries.clear()
            t = time.perf_counter()
            p.search(q)
            ms[name].append((time.perf_counter() - t) * 1000)
    out = {f"search, {name}": summary(v) for name, v in ms.items()}
    out["p50_ratio"] = out["search, torch"]["p50_ms"] / out["search, onnx"]["p50_ms"]
    out["documents"] = len(facades["onnx"].docs())
    out["torch_threads"] = torch.get_num_threads()
    out["load"] = [load_before, os.getloadavg()[0]]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--questions", type=Path, default=SHARED / "wtq" / "dev" / "questions.tsv")
    ap.add_argument("--n", type=int, default=200, help="questions for the encoders")
    ap.add_argument("--home", type=Path, help="an existing store: also time Pilar.search")
    ap.add_argument("--searches", type=int, default=100, help="questions for Pilar.search")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    with open(args.questions, encoding="utf-8") as f:
        rows = [r["question"] for r in csv.DictReader(f, delimiter="\t")]
    rng = random.Random(33)
    with tempfile.TemporaryDirectory(prefix="pilar-models-") as models:
        report = {"cpus": os.cpu_count()}
        if args.home:  # first, so that torch keeps its default threads for "before"
            report["search"] = searches(args.home, rng.sample(rows, args.searches), Path(models))
        report["encoder"] = encoders(rng.sample(rows, args.n), Path(models))
    emit(report, args.json)


if __name__ == "__main__":
    main()
