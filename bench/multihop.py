"""Cross-document (multi-hop) questions: support-chain coverage and evidence
delivery per hop count, pilar vs page-only vs flat chunks, side by side.

    python bench/multihop.py [--stores multihop,multihop2,all] [--methods ...]
                             [--settings 512:3,1024:5] [--chunk 128:16]
                             [--breadths 2:12:10,1:12:10] [--json OUT]

Question sets (``../shared/data``): ``multihop`` (24 documents, 40 questions
of 1-3 hops) and ``multihop2`` (60 documents, 20 of them topical
distractors: sister ships, sibling models, superseded versions; 80 questions
of 1-4 hops), and ``multihop2 reworded`` (``bench/data/multihop2_reworded.tsv``:
multihop2's 65 questions of 2-4 hops in other words, same chains and answers:
how much of a method's figures rests on the question sharing words with the
documents). Stores (under ``bench/out``, ingested the first time; HTML
only, as the PDF copies hold the same text twice): one per set, and ``all``,
both sets together with the 400 WTQ dev pages as unrelated distractors. Each
set's questions run on its own store and on ``all``.

Figures per hop count, all from :func:`pilar.eval.run.score_question`:

- ``chain@3``, ``chain@5``, ``chain@10``: support-chain coverage, every
  document of the chain among the first k ranked documents (PILAR App. J.8
  all-support-docs@k; flat chunks: the distinct pages of its first 10
  chunks); ``chain@1-10``: the same averaged over k = 1..10 (the PILAR
  code's all-gold-documents-in-top-k);
- ``delivery@B/kK``: every gold answer in the packet of at most B tokens
  built from the first K ranked pages (flat chunks: chunks in rank order
  until the budget is full), for each ``--settings`` pair.

Methods (``bench/baselines.py``): ``pilar (multi-hop)`` (iterative bridge
expansion, :mod:`pilar.retrieval.bridges`), ``pilar (single-shot)`` (the
default profile: one hop from the question's entities), ``page_only`` (the
hybrid shortlist without graph), ``flat_chunks`` (``--chunk`` size:overlap
tokens). ``--breadths HOPS:BEAM:UNITS,...`` adds the multi-hop profile at
other breadths (``max_hops``, ``bridge_beam``, ``bridge_units``) as methods
``pilar (multi-hop HOPS/BEAM/UNITS)``: what a narrower expansion saves in
time and costs in chains, side by side. Each method's median search time
(retrieval and packing at the last setting) is reported beside its figures.
JSON: ``figures`` (store -> set -> method -> group -> figure), ``ms``
(store -> set -> method -> median ms) and ``per_question`` (store -> set ->
method -> figure -> one value per question, with ``hops`` and ``qid``).
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
from results import write  # noqa: E402
from baselines import OUT, SHARED, FlatChunks, ingest, page_only, pilar_search  # noqa: E402

from pilar import Pilar  # noqa: E402
from pilar.eval.questions import load_questions  # noqa: E402
from pilar.eval.run import RANK_DEPTH, aggregate, score_question  # noqa: E402
from pilar.retrieval.expansion import GraphRetriever  # noqa: E402

REWORDED = "multihop2 reworded"
"""multihop2's questions of 2-4 hops in other words (``bench/data/multihop2_reworded.tsv``)."""
SETS = ("multihop", "multihop2", REWORDED)
STORES = {"multihop": ("multihop",), "multihop2": ("multihop2", REWORDED), "all": SETS}
"""Store -> the question sets whose documents it holds (``all`` also holds the WTQ dev pages)."""


def questions_of(name: str) -> list:
    """The questions of the set ``name`` (:data:`SETS`)."""
    path = Path(__file__).resolve().parent / "data" / "multihop2_reworded.tsv" \
        if name == REWORDED else SHARED / name / "questions.tsv"
    return load_questions(path)[0]
RANK_FIGURES = ("chain@3", "chain@5", "chain@10", "chain@1-10")
METHODS = ("pilar (multi-hop)", "pilar (single-shot)", "page_only", "flat_chunks")


def open_store(name: str, out: Path, console: Console) -> Pilar:
    """The store ``name`` of :data:`STORES` under ``out``, ingesting what it lacks."""
    p = Pilar(home=out / f"home-{name if name != 'all' else 'multihop-all'}")
    t0 = time.perf_counter()
    n = failed = 0
    for s in dict.fromkeys("multihop2" if s == REWORDED else s for s in STORES[name]):
        files, bad = ingest(p, SHARED / s, "*.html")
        n, failed = n + files, failed + bad
    if name == "all":
        files, bad = ingest(p, SHARED / "wtq" / "dev" / "pages")
        n, failed = n + files, failed + bad
    console.print(f"store {name}: {n} files ({failed} failed) in {time.perf_counter() - t0:.0f} s")
    return p


def at_breadth(p: Pilar, hops: int, beam: int, units: int):
    """The multi-hop method with ``max_hops``, ``bridge_beam`` and
    ``bridge_units`` set (a retriever of its own over ``p``'s stores, on the
    multi-hop profile's settings)."""
    settings = p.retriever("multi-hop").s.model_copy(
        update={"max_hops": hops, "bridge_beam": beam, "bridge_units": units})
    r = GraphRetriever(p.graph, p.index, p.retrievers.hybrid, settings)
    return lambda q, b, k: pilar_search(p, q.question, b, k,
                                        ranked=r.search(q.question, max(k, RANK_DEPTH)))


def run_set(p: Pilar, questions, methods: dict, settings: list[tuple[int, int]]):
    """``(figures, ms, per_question)`` of every method on ``questions``."""
    figures, ms, per_question = {}, {}, {}
    for name, method in methods.items():
        rows_by = {s: [] for s in settings}
        times = []
        for q in track(questions, description=name, transient=True):
            for budget, k in settings:
                t = time.perf_counter()
                got = method(q, budget, k)
                times.append((time.perf_counter() - t) * 1000)
                assert p.tokens.count(got.text) <= budget, (name, budget)
                rows_by[(budget, k)].append(score_question(q, got, budget, k))
        first = rows_by[settings[0]]
        means, counts = aggregate(first)
        figures[name] = {g: {f: round(means[g][f], 4) for f in RANK_FIGURES} | {"n": counts[g]}
                         for g in means}
        per_question[name] = {"qid": [r.qid for r in first], "hops": [r.hops for r in first]}
        for f in RANK_FIGURES:
            per_question[name][f] = [r.figures[f] for r in first]
        for budget, k in settings:
            label = f"delivery@{budget}/k{k}"
            rows = rows_by[(budget, k)]
            means, _ = aggregate(rows)
            for g in means:
                figures[name][g][label] = round(means[g][f"delivery@{budget}"], 4)
            per_question[name][label] = [r.figures[f"delivery@{budget}"] for r in rows]
        ms[name] = round(statistics.median(times[len(settings) - 1::len(settings)]), 1)
    return figures, ms, per_question


def print_table(console: Console, title: str, figures: dict, ms: dict) -> None:
    groups = list(next(iter(figures.values())))
    labels = list(next(iter(figures.values()))[groups[0]])
    labels.remove("n")
    table = Table(title=title)
    table.add_column("method")
    table.add_column("group")
    for label in labels:
        table.add_column(label.replace("delivery@", "deliv "), justify="right")
    table.add_column("ms", justify="right")
    for name, by in figures.items():
        for i, g in enumerate(groups):
            table.add_row(name if i == 0 else "", f"{g} (n={by[g]['n']})",
                          *[f"{by[g][label]:.3f}" for label in labels],
                          f"{ms[name]:.0f}" if i == 0 else "",
                          end_section=i == len(groups) - 1)
    console.print(table)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stores", default="multihop,multihop2,all",
                    help=f"comma-separated, of {', '.join(STORES)}")
    ap.add_argument("--methods", default=",".join(METHODS), help="comma-separated, of "
                    + ", ".join(METHODS))
    ap.add_argument("--settings", default="512:3,1024:5", help="budget:k pairs")
    ap.add_argument("--chunk", default="128:16", help="flat chunk size:overlap (tokens)")
    ap.add_argument("--out", type=Path, default=OUT, help="where the stores live")
    ap.add_argument("--breadths", default="", help="HOPS:BEAM:UNITS of the multi-hop "
                    "profile to run beside it, comma-separated (e.g. 2:12:10,1:12:10)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    console = Console()
    settings = [tuple(int(x) for x in s.split(":")) for s in args.settings.split(",")]
    size, overlap = (int(x) for x in args.chunk.split(":"))
    wanted = [m.strip() for m in args.methods.split(",")]

    result: dict = {"figures": {}, "ms": {}, "per_question": {}, "settings": args.settings}
    for store in args.stores.split(","):
        p = open_store(store, args.out, console)
        sets = {s: questions_of(s) for s in STORES[store]}
        p.embedder.prime([q.question for qs in sets.values() for q in qs])
        every = {
            "pilar (multi-hop)": lambda q, b, k: pilar_search(p, q.question, b, k, "multi-hop"),
            "pilar (single-shot)": lambda q, b, k: pilar_search(p, q.question, b, k,
                                                                "single-shot"),
            "page_only": lambda q, b, k: page_only(p, q.question, b, k),
        }
        if "flat_chunks" in wanted:
            flat = FlatChunks(p, size=size, overlap=overlap, cache=OUT)
            every["flat_chunks"] = lambda q, b, k: flat.retrieve(q.question, b)
        methods = {m: every[m] for m in wanted}
        for spec in filter(None, args.breadths.split(",")):
            hops, beam, units = (int(x) for x in spec.split(":"))
            methods[f"pilar (multi-hop {hops}/{beam}/{units})"] = at_breadth(p, hops, beam, units)
        for s, questions in sets.items():
            figures, ms, per_question = run_set(p, questions, methods, settings)
            print_table(console, f"{s} questions ({len(questions)}) on store {store}",
                        figures, ms)
            result["figures"].setdefault(store, {})[s] = figures
            result["ms"].setdefault(store, {})[s] = ms
            result["per_question"].setdefault(store, {})[s] = per_question
        p.close()
    write(result, args.json, indent=1)


if __name__ == "__main__":
    main()
