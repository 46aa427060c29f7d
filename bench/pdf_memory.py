"""Peak memory of ingesting one long PDF: builds a PDF of ``--pages`` pages
from ../shared/data/pdf/wiki (the printed dev pages, concatenated in a
fixed-seed order and repeated until long enough) and ingests it.

    python bench/pdf_memory.py [--pages 1600] [--workers N] [--home DIR] [--json OUT]

The ingest runs in its own process (fresh ``PILAR_HOME`` unless ``--home``)
and reports the peak RSS (``ru_maxrss``) of that process (the writer: model,
embedding, store) and of its parse worker (sampled every 0.2 s), pages,
units, seconds and pages/s.
The bound the issue sets is 2 GB per process.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from results import emit

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"


def build_pdf(out: Path, pages: int) -> int:
    """Write a PDF of exactly ``pages`` pages made of the wiki PDFs; returns
    its size in bytes."""
    import pymupdf

    sources = sorted((SHARED / "pdf" / "wiki").glob("*.pdf"))
    random.Random(13).shuffle(sources)
    doc = pymupdf.open()
    while doc.page_count < pages:
        for src in sources:
            with pymupdf.open(src) as s:
                take = min(s.page_count, pages - doc.page_count)
                doc.insert_pdf(s, to_page=take - 1)
            if doc.page_count >= pages:
                break
    doc.save(out, garbage=3, deflate=True)
    doc.close()
    return out.stat().st_size


def worker_peak(stop: threading.Event, peak: list[int]) -> None:
    """Keep in ``peak[0]`` the largest RSS seen of a parse worker (a process
    forked by this process's forkserver, so not a child: ``RUSAGE_CHILDREN``
    never sees it) until ``stop`` is set; sampled every 0.2 s."""
    import psutil

    me = psutil.Process()
    while not stop.wait(0.2):
        for proc in me.children(recursive=True):
            try:
                if proc.ppid() != me.pid:
                    peak[0] = max(peak[0], proc.memory_info().rss)
            except psutil.NoSuchProcess:
                pass


def child(path: str, home: str, workers: int | None) -> dict:
    from pilar import Pilar

    p = Pilar(home=home)
    p.embedder.encode(["warm up"])
    stop, peak = threading.Event(), [0]
    sampler = threading.Thread(target=worker_peak, args=(stop, peak))
    sampler.start()
    t = time.perf_counter()
    r = p.ingest([path], workers=workers)[0]
    wall = time.perf_counter() - t
    stop.set()
    sampler.join()
    return {"status": r.status, "reason": r.reason, "pages": r.n_pages, "units": r.n_units,
            "seconds": round(wall, 1), "pages_per_s": round(r.n_pages / wall, 2),
            "stages_s": {k: round(v, 1) for k, v in r.stages.items()},
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
            "peak_rss_worker_mb": round(peak[0] / 2**20)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", type=int, default=1600)
    ap.add_argument("--workers", type=int, default=1, help="parse workers (0 = in process)")
    ap.add_argument("--home", type=Path)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        path, home, workers = args.child
        print(json.dumps(child(path, home, int(workers))))
        return
    tmp = Path(tempfile.mkdtemp(prefix="pilar-pdf-memory-"))
    pdf = tmp / f"long-{args.pages}.pdf"
    size = build_pdf(pdf, args.pages)
    home = args.home or tmp / "home"
    proc = subprocess.run([sys.executable, __file__, "--child", str(pdf), str(home),
                           str(args.workers)], capture_output=True, text=True)
    if proc.returncode:
        raise SystemExit(proc.stderr[-3000:])
    fig = {"pdf_pages": args.pages, "pdf_mb": round(size / 2**20, 1),
           **json.loads(proc.stdout.strip().splitlines()[-1])}
    emit(fig, args.json)


if __name__ == "__main__":
    main()
