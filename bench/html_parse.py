"""HTML parse time per page: pilar's parse_html against trafilatura.

On the 400 pages of ``wtq/dev`` it times, page by page, one pass each,
:func:`pilar.ingest.html.parse_html` (decode, parse, grids, units) and
``trafilatura.extract(html, include_tables=True)`` on the same bytes, after
a warm-up over the first pages, and prints median / p90 / mean
milliseconds per page and the ratio (Tessera §3.6 reports 15 ms per page on
one core). Run it on one core:

    taskset -c 0 python bench/html_parse.py [--data ../shared/data] [--json OUT]

``--cpu N`` pins the process itself instead of taskset; ``--limit N`` times
the first N pages only; ``--no-trafilatura`` times pilar alone.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pilar.config import Settings  # noqa: E402
from pilar.ingest import new_document  # noqa: E402
from pilar.ingest.html import parse_html  # noqa: E402

WARMUP = 20


def summarize(ms: list[float]) -> dict[str, float]:
    ordered = sorted(ms)
    return {"median_ms": statistics.median(ordered),
            "p90_ms": ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))],
            "mean_ms": statistics.fmean(ordered), "max_ms": ordered[-1],
            "total_s": sum(ordered) / 1000, "ms": ms}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--json", type=Path, help="write the figures here")
    ap.add_argument("--cpu", type=int, help="pin this process to one CPU")
    ap.add_argument("--limit", type=int, help="time only the first N pages")
    ap.add_argument("--no-trafilatura", action="store_true")
    args = ap.parse_args()
    if args.cpu is not None:
        os.sched_setaffinity(0, {args.cpu})
    console = Console()
    base = args.data / "wtq" / "dev"
    metas = [json.loads(line) for line in (base / "pages.jsonl").open(encoding="utf-8")]
    pages = [(m["page_id"], (base / m["html"]).read_bytes()) for m in metas[:args.limit]]
    settings = Settings()
    extract = None
    if not args.no_trafilatura:
        import trafilatura

        extract = trafilatura.extract

    def run_pilar(page_id: str, data: bytes) -> int:
        parsed = parse_html(data, new_document(data, page_id, "text/html"), settings)
        return len(parsed.units)

    for page_id, data in pages[:WARMUP]:
        run_pilar(page_id, data)
        if extract:
            extract(data, include_tables=True)
    times: dict[str, list[float]] = {"pilar": [], "trafilatura": []}
    n_units = n_chars = 0
    clock = time.perf_counter
    with Progress(console=console, transient=True) as progress:
        # One pass per tool, so neither pollutes the other's caches or heap.
        task = progress.add_task("pilar", total=len(pages))
        for page_id, data in pages:
            t0 = clock()
            n_units += run_pilar(page_id, data)
            times["pilar"].append((clock() - t0) * 1000)
            progress.advance(task)
        if extract:
            task = progress.add_task("trafilatura", total=len(pages))
            for _, data in pages:
                t0 = clock()
                text = extract(data, include_tables=True) or ""
                times["trafilatura"].append((clock() - t0) * 1000)
                n_chars += len(text)
                progress.advance(task)
    results = {name: summarize(ms) for name, ms in times.items() if ms}
    cpus = sorted(os.sched_getaffinity(0))
    table = Table(title=f"HTML parse, {len(pages)} wtq/dev pages, CPUs {cpus}")
    for col in ("tool", "median ms", "p90 ms", "mean ms", "max ms", "total s"):
        table.add_column(col, justify="right" if col != "tool" else "left")
    for name, r in results.items():
        table.add_row(name, f"{r['median_ms']:.2f}", f"{r['p90_ms']:.2f}", f"{r['mean_ms']:.2f}",
                      f"{r['max_ms']:.1f}", f"{r['total_s']:.2f}")
    console.print(table)
    console.print(f"pilar: {n_units} units; trafilatura: {n_chars} characters extracted")
    if "trafilatura" in results:
        ratio = {k: results["trafilatura"][k] / results["pilar"][k]
                 for k in ("median_ms", "p90_ms", "mean_ms")}
        console.print("trafilatura / pilar: " + ", ".join(
            f"{k.removesuffix('_ms')} {v:.1f}x" for k, v in ratio.items()))
        results["ratio"] = ratio
    if args.json:
        import lxml.etree

        results["env"] = {"pages": len(pages), "cpus": cpus, "python": platform.python_version(),
                          "lxml": ".".join(map(str, lxml.etree.LXML_VERSION))}
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
