"""Assertion-graph figures over the WikiTableQuestions dev pages (issue 6).

Usage::

    python bench/assertion_counts.py                 # parse only: counts, rows, timing
    python bench/assertion_counts.py --ingest 400 --sample 50 --out links.tsv

Parse mode parses every page with :func:`pilar.ingest.parse` and reports
assertions per modality, rows of tables with and without assertions (rows
with a single non-empty cell cannot hold one), entities (distinct ids) and
the median time of the graph step (:func:`pilar.ingest.graph_build.build_graph`,
best of three runs per page, milliseconds).

``--ingest N`` also ingests the first N pages into a temporary
:class:`pilar.Pilar` store (real embeddings, SQLite graph), reports the
store's counts (SAME_AS by method) and, with ``--sample K``, writes K SAME_AS
links drawn with ``random.Random(--seed)`` to ``--out`` as TSV (names,
types, aliases, method, score and a context line for each side) for hand
labelling (tests/fixtures/same_as_labels.tsv).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path

from pilar.config import Settings
from pilar.ingest import new_document, parse
from pilar.ingest.graph_build import build_graph
from pilar.ingest.html import parse_html

ROOT = Path(__file__).resolve().parents[1]
PAGES = ROOT.parent / "shared" / "data" / "wtq" / "dev" / "pages"


def parse_figures(pages: list[Path], settings: Settings) -> dict:
    modality: Counter[str] = Counter()
    extractor: Counter[str] = Counter()
    entity_ids: set[str] = set()
    rows = rows_with = single = 0
    missing: list[str] = []
    times: list[float] = []
    mentions = 0
    for path in pages:
        parsed = parse(path, settings=settings)
        data = path.read_bytes()
        best = float("inf")
        for _ in range(3):
            bare = parse_html(data, new_document(data, str(path), "text/html"), settings)
            t0 = time.perf_counter()
            build_graph(bare, settings, data)
            best = min(best, time.perf_counter() - t0)
        times.append(best)
        for a in parsed.assertions:
            modality[a.modality] += 1
            extractor[a.extractor] += 1
        entity_ids.update(e.entity_id for e in parsed.entities)
        mentions += sum(len(e.mentions) for e in parsed.entities)
        supported = {sid for a in parsed.assertions for sid in a.supports}
        for s in parsed.supports:
            if s.kind != "row":
                continue
            rows += 1
            if s.support_id in supported:
                rows_with += 1
                continue
            grid = parsed.tables[s.provenance.table_index]
            filled = {c.cell_id for c in grid.cells[s.provenance.row] if c.text}
            if len(filled) <= 1:
                single += 1
            else:
                missing.append(f"{path.name}: {s.text[:80]}")
    return {"pages": len(pages), "assertions": sum(modality.values()),
            "by_modality": dict(modality), "by_extractor": dict(extractor),
            "table_rows": rows, "rows_with_assertions": rows_with,
            "rows_single_cell": single, "rows_without_assertions": len(missing),
            "rows_without_examples": missing[:10], "entities_distinct": len(entity_ids),
            "mentions": mentions,
            "graph_ms_median": round(statistics.median(times) * 1000, 2),
            "graph_ms_p90": round(sorted(times)[int(0.9 * (len(times) - 1))] * 1000, 2)}


def _context(graph, entity_id: str) -> tuple[str, str]:
    """The page (source file stem) and text of the entity's first mention
    (smallest support id), through the graph store's public reads."""
    mentions = graph.entity_links([entity_id], limit=1).mentions
    if not mentions:
        return "", ""
    support = graph.supports_by_id([mentions[0][1]])[mentions[0][1]]
    [doc] = graph.documents([support.doc_id])
    return Path(doc.uri).stem, " ".join(support.text.split())[:160]


def ingest_figures(pages: list[Path], sample: int, seed: int, out: Path | None) -> dict:
    from pilar import Pilar

    with tempfile.TemporaryDirectory(prefix="pilar-bench-") as home:
        p = Pilar(home=home)
        t0 = time.perf_counter()
        results = p.ingest(pages)
        seconds = time.perf_counter() - t0
        stats = p.stats()
        links = p.graph.same_as_links()
        by_method = dict(Counter(link.method for link in links))
        if out is not None and sample:
            chosen = random.Random(seed).sample(links, min(sample, len(links)))
            entities = p.graph.get_entities(list({e for link in chosen
                                                  for e in (link.source, link.target)}))
            lines = ["source_name\ttarget_name\tmethod\tscore\tlabel\tsource_type\t"
                     "target_type\tsource_aliases\ttarget_aliases\tsource_page\t"
                     "source_context\ttarget_page\ttarget_context"]
            for link in chosen:
                s, t = entities[link.source], entities[link.target]
                sp, sc = _context(p.graph, s.entity_id)
                tp, tc = _context(p.graph, t.entity_id)
                lines.append("\t".join([s.name, t.name, link.method, f"{link.score:.4f}", "",
                                        s.type, t.type, "|".join(s.aliases), "|".join(t.aliases),
                                        sp, sc, tp, tc]))
            out.write_text("\n".join(lines) + "\n", encoding="utf-8")
        p.close()
    return {"ingested": Counter(r.status for r in results), "seconds": round(seconds, 1),
            "documents": stats["documents"], "assertions": stats["assertions"],
            "entities": stats["entities"], "mentioned_in": stats["MENTIONED_IN"],
            "same_as": stats["SAME_AS"], "same_as_by_method": by_method}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pages", type=Path, default=PAGES)
    ap.add_argument("--limit", type=int, default=0, help="parse only the first N pages")
    ap.add_argument("--ingest", type=int, default=0, help="ingest the first N pages too")
    ap.add_argument("--sample", type=int, default=0, help="SAME_AS links to sample")
    ap.add_argument("--seed", type=int, default=6)
    ap.add_argument("--out", type=Path, default=None, help="TSV of the sampled links")
    ap.add_argument("--json", type=Path, default=None, help="write the figures here")
    args = ap.parse_args()
    pages = sorted(args.pages.glob("*.html"))
    settings = Settings()
    figures = parse_figures(pages[:args.limit] if args.limit else pages, settings)
    print(json.dumps(figures, indent=2, ensure_ascii=False))
    report = {"parse": figures}
    if args.ingest:
        report["ingest"] = ingest_figures(pages[:args.ingest], args.sample, args.seed, args.out)
        print(json.dumps(report["ingest"], indent=2, ensure_ascii=False))
    if args.json:
        args.json.write_text(json.dumps(report, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
