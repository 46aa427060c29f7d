"""CPU seconds of ``GET /v1/pages/{id}/image`` on a page that is slow to
render: builds a one-page PDF whose content stream shows ``--runs`` text
runs of 100 characters each (``BT (AAAA...) Tj ET``, deflated to a small
file: the kind of render-cost bomb of issue 30's 3.6 MB page) and times, in this process, the first render (from
the source: read, sha256, rasterise, PNG) and the next requests of the same
page and dpi, plain and with ``--boxes`` supports highlighted (from the
cache: the boxes drawn on the cached render), as pilar.api.images serves them.

    python bench/page_image.py [--runs 200000] [--boxes 20] [--repeat 5] [--json OUT]
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import tempfile
import time
from pathlib import Path

from results import emit


def build_pdf(out: Path, runs: int) -> int:
    """Write the one-page PDF of ``runs`` text runs; returns its size in bytes."""
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_text((72, 72), "a page slow to render")  # gives the page a font and a stream
    font = page.get_fonts()[0][4]
    ops = "\n".join(f"BT /{font} 6 Tf {(i * 7) % 500 + 10} {(i * 13) % 760 + 10} Td "
                    f"({'A' * 100}) Tj ET" for i in range(runs))
    doc.update_stream(page.get_contents()[0], ops.encode(), compress=True)
    doc.save(out, deflate=True)
    return out.stat().st_size


def cpu(fn) -> tuple[float, object]:
    start = time.process_time()
    value = fn()
    return time.process_time() - start, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200_000)
    parser.add_argument("--boxes", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--dpi", type=int, default=110)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    from pilar.api.images import PageImages, highlight
    from pilar.config import Settings
    from pilar.model import Document

    with tempfile.TemporaryDirectory() as tmp:
        pdf = Path(tmp) / "bomb.pdf"
        size = build_pdf(pdf, args.runs)
        sha = hashlib.sha256(pdf.read_bytes()).hexdigest()
        doc = Document(doc_id=sha[:16], uri=str(pdf), title="bomb", media_type="application/pdf",
                       sha256=sha, n_pages=1)
        images = PageImages(Settings(home=Path(tmp)))
        first, render = cpu(lambda: images.render(doc, 1, args.dpi))
        boxes = [(20.0 + 25 * i, 40.0, 40.0 + 25 * i, 60.0) for i in range(args.boxes)]
        plain = [cpu(lambda: highlight(images.render(doc, 1, args.dpi), []))[0]
                 for _ in range(args.repeat)]
        lit = [cpu(lambda: highlight(images.render(doc, 1, args.dpi), boxes))[0]
               for _ in range(args.repeat)]
    result = {"pdf_bytes": size, "text_runs": args.runs, "dpi": args.dpi, "png_bytes": len(render.png),
              "first_render_cpu_s": round(first, 3),
              "cached_plain_cpu_s_median": round(statistics.median(plain), 4),
              "cached_highlighted_cpu_s_median": round(statistics.median(lit), 4),
              "boxes": args.boxes, "repeat": args.repeat}
    emit(result, args.json)


if __name__ == "__main__":
    main()
