"""Per-search latency (reader excluded): p50 and p95 of ``Pilar.search``.

    python bench/query_latency.py [--home DIR] [--questions TSV] [--n N]
                                  [--neo4j-uri URI] [--es-url URL --es-prefix P] [--json OUT]

Runs ``--n`` lookup questions (fixed-seed sample) against a store that
already holds the corpus (``bench/retrieval_recall.py`` or
``bench/delivery.py`` fill ``bench/out/home-dev``), after 5 warm-up searches.
With ``--neo4j-uri`` (or NEO4J_URI) the same questions also run with the
graph on Neo4j and the page index kept in the same embedded file: the
store's documents are parsed again and their graph written to Neo4j (the
page vectors are not recomputed). With ``--es-url`` too, the production
stack (graph on Neo4j, page index on Elasticsearch under ``--es-prefix``, no
SQLite file) is measured instead of the Neo4j + embedded-index one; it must
already hold the corpus
(``bench/backend_parity.py --fill`` or ``pilar ingest`` on that stack). Each
stack is measured twice: with the
page cache warm (a long-running server's steady state) and emptied before
every search. Targets on the 400-page corpus, 2 cores:
p50 <= 150 ms, p95 <= 400 ms.

Besides p50/p95/mean (ms) it reports the 1-minute load average before and
after each run, torch's thread count and whether the driver's Rust extension
(``neo4j-rust-ext``) is installed: on a shared 2-core machine these move the
figures more than anything else.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import random
import statistics
import time
from pathlib import Path

from rich.console import Console
from rich.progress import track
from rich.table import Table

from pilar import Pilar
from pilar.config import Settings
from pilar.graph.linking import link_across
from pilar.ingest import parse
from results import write

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


def measure(p: Pilar, questions: list[str], cold: bool = False) -> dict[str, float]:
    """Latency of ``p.search`` over ``questions`` after 5 warm-up searches:
    ``{"ms" (one per search, in question order), "p50_ms", "p95_ms", "mean_ms",
    "n", "load_before", "load_after"}`` (load = 1-minute load average). Every question is
    embedded afresh (the query-vector cache is emptied). ``cold`` empties the
    page cache (supports and units of packed pages) before every search;
    otherwise all questions run once untimed first, so their pages are
    cached as on a long-running server."""
    for q in questions if not cold else questions[:5]:
        p.search(q)
    load_before = os.getloadavg()[0]
    times = []
    for q in track(questions, description=f"search ({p.graph.name} + {p.index.name}"
                                          f"{', cold' if cold else ''})"):
        p.embedder._queries.clear()
        if cold:
            p.pages.clear()
        t = time.perf_counter()
        p.search(q)
        times.append((time.perf_counter() - t) * 1000)
    samples = list(times)
    times.sort()
    return {"ms": samples, "p50_ms": statistics.median(times), "p95_ms": times[int(0.95 * (len(times) - 1))],
            "mean_ms": statistics.fmean(times), "n": len(times),
            "load_before": load_before,
            "load_after": os.getloadavg()[0]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--home", type=Path, default=Path(__file__).resolve().parent / "out" / "home-dev")
    ap.add_argument("--questions", type=Path, default=SHARED / "wtq" / "dev" / "questions.tsv")
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--neo4j-uri", default=os.environ.get("NEO4J_URI"))
    ap.add_argument("--es-url", default=os.environ.get("ELASTICSEARCH_URL"))
    ap.add_argument("--es-prefix", default="pilar")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    console = Console()
    rows = [r.split("\t") for r in args.questions.read_text(encoding="utf-8").splitlines()[1:]]
    questions = random.Random(13).sample([r[1] for r in rows if r[4] == "1"], args.n)

    embedded = Pilar(home=args.home)
    n_docs = len(embedded.docs())
    report = {"sqlite": measure(embedded, questions),
              "sqlite, cold page cache": measure(embedded, questions, cold=True)}
    if args.neo4j_uri and not args.es_url:
        settings = Settings(graph="neo4j", neo4j_uri=args.neo4j_uri)
        neo = Pilar(home=args.home, settings=settings)
        stored = {d.doc_id for d in neo.graph.documents()}
        for doc in track(embedded.docs(), description="graph into Neo4j"):
            if doc.doc_id not in stored:
                parsed = parse(Path(doc.uri), settings=neo.settings)
                parsed.same_as = link_across(parsed, neo.graph, neo.settings)
                neo.graph.write_document(parsed)
        report["neo4j"] = measure(neo, questions)
        report["neo4j, cold page cache"] = measure(neo, questions, cold=True)
    if args.neo4j_uri and args.es_url:
        prod = Pilar(settings=Settings(home=args.home / "unused", graph="neo4j",
                                       neo4j_uri=args.neo4j_uri, index="elasticsearch",
                                       elasticsearch_url=args.es_url,
                                       elasticsearch_index=args.es_prefix))
        report["neo4j + elasticsearch"] = measure(prod, questions)
        report["neo4j + elasticsearch, cold page cache"] = measure(prod, questions, cold=True)
    import torch

    report["documents"] = n_docs
    report["env"] = {"cpus": os.cpu_count(), "torch_threads": torch.get_num_threads(),
                     "neo4j_rust_ext": importlib.util.find_spec("neo4j._rust") is not None}
    table = Table(title=f"search latency, {args.n} questions, {n_docs} documents, reader excluded")
    for col in ("graph (+ index)", "p50 ms", "p95 ms", "mean ms", "load"):
        table.add_column(col)
    for name, r in report.items():
        if name not in ("env", "documents"):
            table.add_row(name, f"{r['p50_ms']:.1f}", f"{r['p95_ms']:.1f}", f"{r['mean_ms']:.1f}",
                          f"{r['load_before']:.2f} -> {r['load_after']:.2f}")
    console.print(table)
    console.print(report["env"])
    write(report, args.json)


if __name__ == "__main__":
    main()
