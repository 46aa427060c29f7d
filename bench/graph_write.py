"""Graph write throughput: assertions per second into each GraphStore backend.

    python bench/graph_write.py [--pages DIR] [--limit N] [--batch 1,10] [--neo4j-uri URI]
                                [--json OUT]

Parses ``--limit`` dev pages once (tables, units, assertions, entities), then
writes the same parsed documents into the embedded SQLite store and into Neo4j
(``--neo4j-uri`` or NEO4J_URI; start one with tests/servers/neo4j/start),
side by side, each into an empty store, in batches of ``--batch`` documents
(``GraphStore.write_documents``: one transaction per batch, as ingest writes
the documents of one embedding call, about ten of these pages; 1 is a
transaction per document), for
each batch size given. Reports documents, assertions, seconds and assertions
per second (all graph rows of a batch are written in its one transaction, so
the rate includes pages, supports, units and entities). Target: >= 10,000
assertions/s into Neo4j (issue 34). The JSON keeps the largest batch under
``sqlite`` and ``neo4j``, every size under ``by_batch``. The test launcher
tunes its JVM for start-up (C1 only) and a small heap; for throughput start it
with full JIT and docker-compose.yml's memory (2 GB heap, 1 GB page cache):
``NEO4J_JAVA_OPTS=-XX:+UseParallelGC NEO4J_HEAP=2g NEO4J_PAGECACHE_MB=1024
tests/servers/neo4j/start`` (the second run in a server's life is the
warmed-up figure).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.progress import track
from rich.table import Table

from pilar.graph.sqlite import SqliteGraphStore
from pilar.db import SqliteDatabase
from pilar.ingest import parse
from results import write

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


def write_all(store, docs, size: int) -> float:
    """Seconds to write ``docs`` into ``store`` in batches of ``size``."""
    t0 = time.perf_counter()
    for i in range(0, len(docs), size):
        store.write_documents([(parsed, []) for parsed in docs[i:i + size]])
    return time.perf_counter() - t0


def clear(store) -> None:
    """Empty a Neo4j store (schema kept), in batches (an implicit transaction)."""
    with store.driver.session() as session:
        session.run("MATCH (n) WHERE NOT n:SchemaMigration "
                    "CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS").consume()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", type=Path, default=SHARED / "wtq" / "dev" / "pages")
    ap.add_argument("--limit", type=int, default=100)
    ap.add_argument("--batch", default="1,10",
                    help="documents per transaction, comma-separated (each size an empty store)")
    ap.add_argument("--neo4j-uri", default=os.environ.get("NEO4J_URI"))
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    console = Console()
    files = sorted(args.pages.glob("*.html"))[: args.limit]
    docs = [parse(f) for f in track(files, description="parse")]
    n_assert = sum(len(d.assertions) for d in docs)
    n_support = sum(len(d.supports) for d in docs)
    console.print(f"{len(docs)} documents, {n_assert} assertions, {n_support} supports, "
                  f"{sum(len(d.entities) for d in docs)} entity records")

    sizes = sorted({int(b) for b in args.batch.split(",")}, reverse=True)
    report: dict[tuple[str, int], float] = {}
    for size in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            store = SqliteGraphStore(SqliteDatabase(Path(tmp) / "bench.sqlite"))
            report["sqlite", size] = write_all(store, docs, size)
    if args.neo4j_uri:
        from pilar.graph.neo4j import Neo4jGraphStore

        store = Neo4jGraphStore(args.neo4j_uri)
        for size in sizes:
            clear(store)
            report["neo4j", size] = write_all(store, docs, size)
        version = store.server_version()
        clear(store)
        store.close()
        console.print(f"server: {version}")
    else:
        console.print("[yellow]no --neo4j-uri / NEO4J_URI: Neo4j not measured[/]")

    table = Table(title="graph writes (one transaction per batch of documents)")
    for col in ("backend", "docs/write", "documents", "assertions", "seconds", "assertions/s",
                "docs/s"):
        table.add_column(col)
    out: dict = {"by_batch": []}
    for (name, size), secs in report.items():
        row = {"backend": name, "batch": size, "documents": len(docs), "assertions": n_assert,
               "seconds": secs, "assertions_per_s": n_assert / secs,
               "docs_per_s": len(docs) / secs}
        out["by_batch"].append(row)
        out.setdefault(name, row)  # the largest batch first
        table.add_row(name, str(size), str(len(docs)), str(n_assert), f"{secs:.2f}",
                      f"{n_assert / secs:,.0f}", f"{len(docs) / secs:.1f}")
    console.print(table)
    if "neo4j" in out:
        console.print(f"neo4j / sqlite time ratio at {sizes[0]} docs/write: "
                      f"{out['neo4j']['seconds'] / out['sqlite']['seconds']:.1f}x")
    write(out, args.json)


if __name__ == "__main__":
    main()
