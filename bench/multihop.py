"""Cross-document (multi-hop) questions: evidence delivery and support-chain
coverage per hop count, pilar vs page-only vs flat chunks, side by side.

    python bench/multihop.py [--data DIR] [--home DIR] [--settings 512:3,1024:5]
                             [--chunk 128:16] [--json OUT]

Ingests the 24 HTML documents of ``../shared/data/multihop`` (the PDF copies
are left out: they would hold the same text twice) and runs its 40 questions
(10 one-hop controls, 20 two-hop, 10 three-hop; ``doc_ids`` in reasoning
order) at each ``budget:k`` setting. Figures per hop count, all from
:func:`pilar.eval.run.score_question`:

- ``delivery``: every gold answer in the packet of at most ``budget`` tokens
  built from the first ``k`` ranked pages (flat chunks: chunks in rank order
  until the budget is full);
- ``chain``: support-chain coverage, every document of the chain among the
  first ``k`` ranked documents (PILAR App. J.8 all-support-docs@k; flat
  chunks: the first ``k`` distinct pages of its first 10 chunks).

Methods (``bench/baselines.py``): ``pilar`` with the ``multi-hop`` profile
(no adjacent bonus, wider pool; PILAR App. D.4) and with ``single-shot``;
``page_only`` (the hybrid shortlist without graph); ``flat_chunks``
(``--chunk`` size:overlap tokens; the documents are 125-309 tokens long, so
512-token chunks would be whole documents). JSON: ``figures`` (method ->
setting -> group -> figure) and ``per_question`` (method -> setting ->
figure -> one value per question, with ``hops``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.progress import track
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
from baselines import OUT, SHARED, FlatChunks, ingest, page_only, pilar_search  # noqa: E402

from pilar import Pilar  # noqa: E402
from pilar.eval.questions import load_questions  # noqa: E402
from pilar.eval.run import aggregate, score_question  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=SHARED / "multihop")
    ap.add_argument("--home", type=Path, default=OUT / "home-multihop")
    ap.add_argument("--settings", default="512:3,1024:5", help="budget:k pairs")
    ap.add_argument("--chunk", default="128:16", help="flat chunk size:overlap (tokens)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    console = Console()
    settings = [tuple(int(x) for x in s.split(":")) for s in args.settings.split(",")]
    size, overlap = (int(x) for x in args.chunk.split(":"))

    p = Pilar(home=args.home)
    t0 = time.perf_counter()
    n_files, n_failed = ingest(p, args.data, "*.html")
    console.print(f"ingest: {n_files} files ({n_failed} failed) in {time.perf_counter() - t0:.0f} s")
    questions, problems = load_questions(args.data / "questions.tsv")
    for line in problems:
        console.print(f"[yellow]{line}")
    flat = FlatChunks(p, size=size, overlap=overlap, cache=OUT)
    p.embedder.prime([q.question for q in questions])  # one batch instead of 40 calls
    methods = {
        "pilar": lambda q, b, k: pilar_search(p, q.question, b, k, "multi-hop"),
        "pilar (single-shot)": lambda q, b, k: pilar_search(p, q.question, b, k, "single-shot"),
        "page_only": lambda q, b, k: page_only(p, q.question, b, k),
        "flat_chunks": lambda q, b, k: flat.retrieve(q.question, b),
    }

    figures: dict = {}
    per_question: dict = {}
    for budget, k in settings:
        label = f"{budget}:{k}"
        for name, method in methods.items():
            rows = []
            for q in track(questions, description=f"{name} {label}"):
                got = method(q, budget, k)
                assert p.tokens.count(got.text) <= budget, (name, budget)
                rows.append(score_question(q, got, budget, k))
            means, counts = aggregate(rows)
            figures.setdefault(name, {})[label] = {
                g: {"delivery": round(f[f"delivery@{budget}"], 4),
                    "chain": round(f[f"chain@{k}"], 4), "n": counts[g]}
                for g, f in means.items()}
            per_question.setdefault(name, {})[label] = {
                "delivery": [r.figures[f"delivery@{budget}"] for r in rows],
                "chain": [r.figures[f"chain@{k}"] for r in rows],
                "hops": [r.hops for r in rows]}

    for budget, k in settings:
        label = f"{budget}:{k}"
        groups = list(figures["pilar"][label])
        table = Table(title=f"multi-hop, {len(questions)} questions, {n_files} documents, "
                            f"budget {budget} tokens, k {k}: delivery / chain coverage")
        table.add_column("method")
        for g in groups:
            table.add_column(f"{g} (n={figures['pilar'][label][g]['n']})")
        for name in methods:
            by = figures[name][label]
            table.add_row(name if name != "flat_chunks" else flat.name,
                          *[f"{by[g]['delivery']:.3f} / {by[g]['chain']:.3f}" for g in groups])
        console.print(table)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"figures": figures, "per_question": per_question,
                                         "methods": {"flat_chunks": flat.name}}, indent=1))


if __name__ == "__main__":
    main()
