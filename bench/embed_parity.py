"""Do this tree's ingest vectors equal those of a store ingested by another
tree? Re-embeds the units of a few pages of ``--store`` (a COPY of e.g.
/work/stores/main-dev; opening it applies pending migrations) with this
tree's batched, deduplicating :func:`pilar.retrieval.embeddings.page_vectors`
and compares them, row by row (runs, table schema vectors, text windows),
with the stored vectors, and the dense top-10 of sample
questions over those pages.

    python bench/embed_parity.py --store COPY [--pages 2] [--json OUT]

Equal vectors (max |difference| near float32 rounding) mean hybrid scores,
recall@10 and delivery are unchanged by the embedding changes.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

import numpy as np

from pilar import Pilar
from pilar.retrieval.embeddings import Embedder, page_vectors


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--store", type=Path, required=True)
    ap.add_argument("--pages", type=int, default=2)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    p = Pilar(home=args.store)
    docs = random.Random(13).sample(p.docs(), args.pages)
    page_ids = [f"{d.doc_id}:1" for d in docs]
    units = p.graph.units_on_pages(page_ids)
    pages = p.graph.pages(page_ids)
    from pilar.model import Document, ParsedDocument

    parsed = [ParsedDocument(document=Document(doc_id=d.doc_id, uri=d.uri, title=d.title,
                                               media_type=d.media_type, sha256=d.sha256,
                                               n_pages=1),
                             pages=[pages[pid]], units=units.get(pid, []))
              for d, pid in zip(docs, page_ids)]
    fresh = page_vectors(Embedder(p.settings.embedding_model), parsed)
    stored = p.index.page_vectors(page_ids)  # every row of each page, in order
    diffs, other_rows = [], []
    for pid, (vectors, ids) in zip(page_ids, fresh):
        old, old_ids = stored[pid]
        if old_ids != ids[0]:  # e.g. a store ingested before table schema vectors
            other_rows.append(pid)
            continue
        diffs += [float(d) for d in np.abs(old - vectors[0]).max(axis=1)]
    if not diffs:
        raise SystemExit(f"no page has the same vector rows as the store: {other_rows}")
    q = p.embedder.query("who won the most recent season?")
    fig = {"pages": page_ids, "vectors": len(diffs), "pages_with_other_rows": other_rows,
           "max_abs_diff": max(diffs),
           "median_abs_diff": float(np.median(diffs)),
           "dense_for_stored": p.index.dense_for(q, page_ids),
           "dense_fresh": {pid: float((vs[0] @ q).max()) for pid, (vs, _) in zip(page_ids, fresh)}}
    print(json.dumps(fig, indent=2))
    if args.json:
        args.json.write_text(json.dumps(fig, indent=2))


if __name__ == "__main__":
    main()
