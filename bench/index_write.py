"""Bulk page-index writes: pages/s into the embedded SQLite index vs Elasticsearch.

    python bench/index_write.py --home STORE --es-url URL [--limit N] [--batch 1,50] [--json OUT]

Reads the pages and their vectors (one per run of evidence units, or per unit
in older stores, or text window) from an embedded store that already holds the
corpus (a copy of a dev store), and writes them in batches of ``--batch``
documents, with ``PageIndex.add_documents`` (searchable when each call
returns, as at ingest), into a fresh embedded index and a fresh
Elasticsearch index (bulk through the client's helpers, one refresh per
batch) for each batch size given: 1 is a write and a refresh per document.
Reports pages/s, vectors/s and the median ms per document for each, side by
side in one run; the first row of the JSON is the first backend at the
largest batch, the second Elasticsearch at the largest batch.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from pilar import Pilar
from pilar.model import IndexedPages
from pilar.retrieval.elasticsearch import ElasticsearchPageIndex
from pilar.retrieval.sqlite import SqlitePageIndex
from pilar.db import SqliteDatabase
from results import write


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--home", type=Path, required=True)
    ap.add_argument("--es-url", default=os.environ.get("ELASTICSEARCH_URL"))
    ap.add_argument("--limit", type=int, default=400, help="documents")
    ap.add_argument("--batch", default="1,50",
                    help="documents per write, comma-separated (each size a fresh index)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    source = Pilar(home=args.home)
    docs = source.docs()[: args.limit]
    batches = []
    for d in docs:
        ids = [f"{d.doc_id}:{n}" for n in range(1, d.n_pages + 1)]
        pages = source.graph.pages(ids)
        vecs = source.index.page_vectors(ids)
        sections = source.graph.page_sections(ids)
        batches.append(([pages[i] for i in ids], [vecs[i][0] for i in ids],
                        [vecs[i][1] for i in ids], d.collection,
                        [sorted(" > ".join(s) for s in sections[i] if s) for i in ids]))
    sizes = sorted({int(b) for b in args.batch.split(",")}, reverse=True)
    report = {}
    with tempfile.TemporaryDirectory() as tmp:
        for size in sizes:
            targets = {f"sqlite (FTS5 + vectors), {size} docs/write":
                       SqlitePageIndex(SqliteDatabase(Path(tmp) / f"i{size}.sqlite")),
                       f"elasticsearch 9 (bulk, refresh per write), {size} docs/write":
                       ElasticsearchPageIndex(args.es_url,
                                              prefix=f"bench-write-{int(time.time())}-{size}")}
            for name, index in targets.items():
                per_doc = []
                t0 = time.perf_counter()
                for i in range(0, len(batches), size):
                    chunk = batches[i:i + size]
                    t = time.perf_counter()
                    index.add_documents([IndexedPages(*b) for b in chunk])
                    per_doc.extend([(time.perf_counter() - t) * 1000 / len(chunk)] * len(chunk))
                total = time.perf_counter() - t0
                n_pages = sum(len(b[0]) for b in batches)
                n_vecs = sum(len(v) for b in batches for v in b[1])
                report[name] = {"pages": n_pages, "vectors": n_vecs, "batch": size,
                                "seconds": total, "pages_per_s": n_pages / total,
                                "vectors_per_s": n_vecs / total,
                                "median_ms_per_doc": statistics.median(per_doc),
                                "count_after": index.count(), "load": os.getloadavg()[0]}
                if isinstance(index, ElasticsearchPageIndex):
                    index.drop()
                index.close()
    table = Table(title=f"page-index writes, {len(batches)} documents")
    for col in ("index", "pages", "vectors", "s", "pages/s", "vectors/s", "ms/doc", "load"):
        table.add_column(col)
    for name, r in report.items():
        table.add_row(name, str(r["pages"]), str(r["vectors"]), f"{r['seconds']:.1f}",
                      f"{r['pages_per_s']:.1f}", f"{r['vectors_per_s']:.0f}",
                      f"{r['median_ms_per_doc']:.1f}", f"{r['load']:.1f}")
    Console().print(table)
    write(report, args.json)


if __name__ == "__main__":
    main()
