"""PDF parsing speed: pilar vs pymupdf4llm, on one core (issue 4, check 4).

    python bench/pdf_parse.py                 # 15 wiki PDFs + 2 scanned PDFs
    python bench/pdf_parse.py --json out.json --files 15 --scanned 6

Pins itself to one CPU (like ``taskset -c 0``; ``--cpu``), then for each of
the first ``--files`` PDFs of ``pdf/wiki`` (sorted by name) times, in the
same process and alternating per file, pilar's PDF parser
(:func:`pilar.ingest.pdf.parse_pdf`: opening, layout analysis, tables,
figures, section paths, supports and units; not the assertion graph that
:func:`pilar.ingest.parse` builds afterwards) and
``pymupdf4llm.to_markdown(doc, use_ocr=False)`` (its layout analyser and
tables; OCR off, as pilar does not OCR pages with a text layer) on the
same bytes, after one untimed warm-up of each (model loading). Reports the
median milliseconds per page over files (each file's time / its pages) and
the ratio pymupdf4llm / pilar. Born-digital target: <= 150 ms per page and
>= 1.5x faster than pymupdf4llm. Then times OCR on ``--scanned`` image-only
PDFs of ``pdf/scanned`` at ``--dpi`` (target <= 4 s per page at 200 dpi).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA = ROOT.parent / "shared" / "data"


def _time(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=15, help="wiki PDFs to time")
    ap.add_argument("--scanned", type=int, default=2, help="scanned PDFs to OCR")
    ap.add_argument("--dpi", type=int, default=200, help="OCR resolution")
    ap.add_argument("--cpu", type=int, default=0, help="CPU to pin to (-1: no pinning)")
    ap.add_argument("--layout", choices=["onnx", "rules"], default="onnx")
    ap.add_argument("--json", dest="json_out", default=None, help="write results here")
    args = ap.parse_args()
    if args.cpu >= 0 and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {args.cpu})
        os.environ.setdefault("OMP_THREAD_LIMIT", "1")  # tesseract

    import pymupdf
    import pymupdf4llm
    from rich.console import Console
    from rich.progress import Progress
    from rich.table import Table

    from pilar.config import Settings
    from pilar.ingest import new_document
    from pilar.ingest.pdf import parse_pdf

    def parse(data: bytes, uri: str = "<bytes>", settings: Settings = None):
        return parse_pdf(data, new_document(data, uri, "application/pdf"), settings)

    settings = Settings(pdf_layout=args.layout, ocr_dpi=args.dpi)
    console = Console()
    files = sorted((DATA / "pdf" / "wiki").glob("*.pdf"))[:args.files]
    scans = sorted((DATA / "pdf" / "scanned").glob("*.pdf"))[:args.scanned]
    quiet = contextlib.redirect_stdout(io.StringIO())

    def llm(data: bytes) -> None:
        with quiet, pymupdf.open(stream=data, filetype="pdf") as doc:
            pymupdf4llm.to_markdown(doc, use_ocr=False)  # text PDFs: no OCR either side

    rows = []
    with Progress(console=console, transient=True) as progress:
        warm = files[0].read_bytes()
        parse(warm, settings=settings)
        llm(warm)
        task = progress.add_task("born-digital", total=len(files))
        for f in files:
            data = f.read_bytes()
            pages = pymupdf.open(stream=data, filetype="pdf").page_count
            t_pilar = _time(lambda: parse(data, uri=str(f), settings=settings))
            t_llm = _time(lambda: llm(data))
            rows.append({"file": f.name, "pages": pages,
                         "pilar_ms_per_page": 1000 * t_pilar / pages,
                         "pymupdf4llm_ms_per_page": 1000 * t_llm / pages})
            progress.advance(task)
        ocr_rows = []
        task = progress.add_task("scanned (OCR)", total=len(scans))
        for f in scans:
            data = f.read_bytes()
            parsed = None

            def run() -> None:
                nonlocal parsed
                parsed = parse(data, uri=str(f), settings=settings)

            seconds = _time(run)
            ocr_rows.append({"file": f.name, "pages": len(parsed.pages),
                             "s_per_page": seconds / len(parsed.pages)})
            progress.advance(task)

    pilar_med = statistics.median(r["pilar_ms_per_page"] for r in rows)
    llm_med = statistics.median(r["pymupdf4llm_ms_per_page"] for r in rows)
    table = Table(title=f"PDF parse, ms per page, one core (cpu {args.cpu})")
    for col in ("file", "pages", "pilar", "pymupdf4llm", "ratio"):
        table.add_column(col, justify="right")
    for r in rows:
        table.add_row(r["file"], str(r["pages"]), f"{r['pilar_ms_per_page']:.0f}",
                      f"{r['pymupdf4llm_ms_per_page']:.0f}",
                      f"{r['pymupdf4llm_ms_per_page'] / r['pilar_ms_per_page']:.2f}x")
    table.add_row("median", "", f"{pilar_med:.0f}", f"{llm_med:.0f}",
                  f"{llm_med / pilar_med:.2f}x", style="bold")
    console.print(table)
    result = {"layout": args.layout, "cpu": args.cpu, "files": len(rows),
              "pilar_median_ms_per_page": pilar_med,
              "pymupdf4llm_median_ms_per_page": llm_med, "speedup": llm_med / pilar_med,
              "per_file": rows}
    if ocr_rows:
        ocr_med = statistics.median(r["s_per_page"] for r in ocr_rows)
        console.print(f"OCR at {args.dpi} dpi: median {ocr_med:.2f} s per page over "
                      f"{len(ocr_rows)} scanned PDFs "
                      f"({sum(r['pages'] for r in ocr_rows)} pages)")
        result.update(ocr_dpi=args.dpi, ocr_median_s_per_page=ocr_med, ocr=ocr_rows)
    console.print(f"pilar median {pilar_med:.0f} ms/page (target <= 150), "
                  f"pymupdf4llm {llm_med:.0f} ms/page, speedup {llm_med / pilar_med:.2f}x "
                  "(target >= 1.5x)")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
