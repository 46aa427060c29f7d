"""Do the two stacks rank alike? Embedded SQLite vs Neo4j + Elasticsearch.

    python bench/backend_parity.py --home STORE --neo4j-uri URI --es-url URL
                                   [--es-prefix pilar] [--n 100] [--profile P] [--json OUT]

``--home`` is an embedded store holding the corpus; the server stack (graph
on Neo4j, page index on Elasticsearch under ``--es-prefix``, no SQLite file)
must hold the same documents (``pilar ingest`` with PILAR_GRAPH=neo4j and
PILAR_INDEX=elasticsearch), or ``--fill`` writes them there: each document
parsed again for the graph, its page vectors copied from the embedded index
(not recomputed: same model, same text), in the facade's order (graph
``pending``, index, graph ``ready``); the page-index bulk rate is reported. For ``--n`` dev lookup questions (fixed-seed
sample) it reports the mean top-10 page overlap between the stacks
(|A∩B| / max(|A|, |B|), 10 unless a stack returned fewer pages)
and each stack's gold-page recall@10, on both the hybrid shortlist (base
scores) and the full search (priors and graph expansion). Targets: overlap
>= 0.9, recall@10 within 1 point.
"""

from __future__ import annotations

import argparse
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
from pilar.eval.questions import load_questions
from pilar.model import Scope
from pilar.graph.linking import link_across
from pilar.ingest import parse
from pilar.writes import page_sections
from results import write

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


def fill_servers(embedded: Pilar, servers: Pilar) -> dict[str, float]:
    """Write the embedded store's documents missing from ``servers`` there
    (see the module docstring); the page-index write rate and totals."""
    servers.recover()
    stored = {d.doc_id for d in servers.graph.documents()}
    index_s, pages, vectors = 0.0, 0, 0
    t0 = time.perf_counter()
    for doc in track(embedded.docs(), description="fill neo4j + elasticsearch"):
        if doc.doc_id in stored:
            continue
        parsed = parse(Path(doc.uri), settings=servers.settings)
        parsed.document.collection = doc.collection
        parsed.same_as = link_across(parsed, servers.graph, servers.settings)
        ids = [p.page_id for p in parsed.pages]
        copied = embedded.index.page_vectors(ids)
        servers.graph.begin_documents([parsed.document])
        t = time.perf_counter()
        servers.index.add_pages(parsed.pages, [copied[i][0] for i in ids],
                                [copied[i][1] for i in ids], collection=doc.collection,
                                sections=page_sections(parsed))
        index_s += time.perf_counter() - t
        servers.graph.write_document(parsed)
        pages += len(ids)
        vectors += sum(len(copied[i][1]) for i in ids)
    return {"pages": pages, "vectors": vectors, "seconds": time.perf_counter() - t0,
            "index_seconds": index_s, "index_pages_per_s": pages / index_s if index_s else 0.0,
            "index_vectors_per_s": vectors / index_s if index_s else 0.0}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--home", type=Path, required=True)
    ap.add_argument("--neo4j-uri", default=os.environ.get("NEO4J_URI"))
    ap.add_argument("--es-url", default=os.environ.get("ELASTICSEARCH_URL"))
    ap.add_argument("--es-prefix", default="pilar")
    ap.add_argument("--questions", type=Path, default=SHARED / "wtq" / "dev" / "questions.tsv")
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--profile", default=None, help="retrieval profile of the full search "
                    "(default: the settings'; multi-hop runs the bridge hops on each stack)")
    ap.add_argument("--only-filled", action="store_true",
                    help="the embedded stack searches only the documents the server stack "
                         "holds (a partial fill); BM25 statistics still span its whole corpus")
    ap.add_argument("--fill", action="store_true", help="write the embedded store's documents "
                    "to the server stack first")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    questions = [(q.question, q.gold[0]) for q in load_questions(args.questions)[0] if q.gold]

    embedded = Pilar(home=args.home)
    servers = Pilar(settings=Settings(home=args.home / "unused", graph="neo4j", index="elasticsearch",
                                      neo4j_uri=args.neo4j_uri, elasticsearch_url=args.es_url,
                                      elasticsearch_index=args.es_prefix))
    stacks = {"embedded (sqlite)": embedded, "neo4j + elasticsearch": servers}
    fill = fill_servers(embedded, servers) if args.fill else None
    stems = {name: {d.doc_id: Path(d.uri).stem for d in p.docs()} for name, p in stacks.items()}
    if args.only_filled:  # questions whose gold page the server stack holds
        held = set(stems["neo4j + elasticsearch"].values())
        questions = [q for q in questions if q[1] in held]
    questions = random.Random(7).sample(questions, min(args.n, len(questions)))
    scopes = {name: None for name in stacks}
    if args.only_filled:
        scopes["embedded (sqlite)"] = Scope.of(doc_ids=list(stems["neo4j + elasticsearch"]))
    report = {"fill": fill, "only_filled": args.only_filled, "documents": {name: len(s) for name, s in stems.items()},
              "index_pages": {name: p.index.count() for name, p in stacks.items()}}
    for stage in ("shortlist", "search"):
        overlap, hits = [], {name: 0 for name in stacks}
        for question, gold in track(questions, description=stage):
            tops = {}
            for name, p in stacks.items():
                if stage == "shortlist":
                    pages = p.hybrid.shortlist(question, scopes[name])[:10]
                else:
                    pages = p.retriever(args.profile).search(question, 10, scopes[name])
                tops[name] = [pg.page_id for pg in pages]
                hits[name] += gold in {stems[name].get(pg.doc_id) for pg in pages}
            a, b = tops.values()
            overlap.append(len(set(a) & set(b)) / max(1, len(a), len(b)))
        report[stage] = {"top10_overlap": statistics.fmean(overlap),
                         "recall@10": {name: h / len(questions) for name, h in hits.items()}}
    table = Table(title=f"{len(questions)} dev lookup questions, "
                        f"{report['documents']['neo4j + elasticsearch']} documents"
                        f"{' (embedded limited to them)' if args.only_filled else ''}")
    for col in ("ranking", "top-10 overlap", *(f"recall@10 {n}" for n in stacks)):
        table.add_column(col)
    for stage in ("shortlist", "search"):
        r = report[stage]
        table.add_row(stage, f"{r['top10_overlap']:.3f}",
                      *(f"{r['recall@10'][n]:.3f}" for n in stacks))
    Console().print(table)
    Console().print({"fill": fill, "documents": report["documents"],
                     "index_pages": report["index_pages"]})
    write(report, args.json)


if __name__ == "__main__":
    main()
