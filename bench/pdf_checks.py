"""Quality checks of PDF ingestion on the shared corpora (issue 4 "done when").

    python bench/pdf_checks.py wiki      # row recall + section paths, pdf/wiki (80)
    python bench/pdf_checks.py scanned   # OCR word recall, pdf/scanned (6)
    python bench/pdf_checks.py real      # every file ingests or fails clearly, pdf/real (21)
    python bench/pdf_checks.py all --json out.json

wiki
  Row recall: for each body row of the gold CSV (``wtq/dev/tables``), some
  row unit of the PDF holds every non-empty cell value of the row
  (lowercase, whitespace collapsed; a value must be a substring of the
  unit's cells joined by spaces; a cell whose footnote marker pilar split
  off also counts as printed, :func:`pilar.ingest.footnotes.printed`, as the
  CSV keeps markers in values). Section paths: for each paragraph or
  list-item support of the PDF whose text is found in a text element of the
  article HTML, the support's section path must equal the HTML heading path
  at the most specific such element (shortest text; any of them on a tie) (title > h2 > h3 ..., derived here with lxml from
  ``wtq/dev/pages``); the share of equal paths is reported.
scanned
  OCR word recall: the share of the words of the born-digital PDF's text
  layer (same pages, ``source_page_range``) found by OCR in the scanned PDF,
  counted as multisets of lowercase alphanumeric tokens.
real
  Every file of ``pdf/real`` either ingests or raises ``IngestError``;
  pages where PyMuPDF's own full-page table finder sees a table must yield
  row units.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pilar.config import Settings  # noqa: E402
from pilar.errors import IngestError  # noqa: E402
from pilar.ingest import parse  # noqa: E402
from pilar.ingest.footnotes import printed  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
_WS = re.compile(r"\s+")


def norm(text: str) -> str:
    return _WS.sub(" ", text).strip().lower()


def gold_rows(page_id: str) -> list[list[str]]:
    path = DATA / "wtq" / "dev" / "tables" / f"{page_id}.csv"
    with path.open(encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f, escapechar="\\", doublequote=False))
    return rows[1:]


def html_blocks(page_id: str, title: str) -> list[tuple[tuple[str, ...], str]]:
    """(heading path, normalised text) of each text element of the article."""
    from lxml import html as lhtml

    raw = (DATA / "wtq" / "dev" / "pages" / f"{page_id}.html").read_bytes()
    root = lhtml.fromstring(b"<div>" + raw + b"</div>",
                            parser=lhtml.HTMLParser(encoding="utf-8"))
    for bad in root.xpath("//script|//style|//*[contains(@class,'mw-editsection')]"
                          "|//sup[contains(@class,'reference')]"):
        bad.drop_tree()
    path: list[tuple[int, str]] = []
    out: list[tuple[tuple[str, ...], str]] = []
    for el in root.iter():
        if el is root:
            continue  # the wrapper holds everything
        tag = el.tag if isinstance(el.tag, str) else ""
        if re.fullmatch(r"h[1-6]", tag):
            level = int(tag[1])
            text = norm(el.text_content())
            while path and path[-1][0] >= level:
                path.pop()
            path.append((level, text))
        elif tag in ("p", "li", "dd", "dt", "div", "blockquote", "caption", "td", "th", "pre"):
            text = norm(el.text_content())
            if text:
                out.append(((norm(title), *(t for _, t in path)), text))
    return out


def check_wiki(settings: Settings, limit: int | None = None) -> dict:
    index = [json.loads(line) for line in (DATA / "pdf" / "wiki" / "index.jsonl").open()]
    index = index[:limit] if limit else index
    rows_total = rows_found = 0
    sec_total = sec_equal = 0
    per_doc = []
    for rec in index:
        pd = parse(DATA / "pdf" / "wiki" / rec["file"], settings=settings)
        units = [" ".join(norm(c) for c in (*u.cells, *printed(
            pd.tables[u.table_index].cells[u.row_index]))) for u in pd.units if u.kind == "row"]
        found = 0
        gold = [r for r in gold_rows(rec["page_id"]) if any(c.strip() for c in r)]
        for row in gold:
            values = [norm(c) for c in row if norm(c)]
            if any(all(v in u for v in values) for u in units):
                found += 1
        rows_total += len(gold)
        rows_found += found
        blocks = html_blocks(rec["page_id"], rec["title"])
        s_tot = s_eq = 0
        for s in pd.supports:
            if s.kind not in ("paragraph", "list_item") or len(s.text) < 20:
                continue
            text = norm(s.text)
            hits = [(len(t), p) for p, t in blocks if text in t]
            if not hits:
                continue
            shortest = min(n for n, _ in hits)  # the most specific elements
            paths = {p for n, p in hits if n == shortest}
            s_tot += 1
            s_eq += tuple(norm(x) for x in s.provenance.section_path) in paths
        sec_total += s_tot
        sec_equal += s_eq
        per_doc.append({"page_id": rec["page_id"], "rows": len(gold), "rows_found": found,
                        "blocks": s_tot, "paths_equal": s_eq})
    return {"documents": len(index), "rows": rows_total,
            "row_recall": rows_found / max(rows_total, 1),
            "blocks_matched": sec_total, "section_path_accuracy": sec_equal / max(sec_total, 1),
            "per_document": per_doc}


_TOKEN = re.compile(r"[a-z0-9]+")


def check_scanned(settings: Settings) -> dict:
    import pymupdf

    index = [json.loads(line) for line in (DATA / "pdf" / "scanned" / "index.jsonl").open()]
    total = hit = 0
    per_doc = []
    for rec in index:
        t0 = time.perf_counter()
        pd = parse(DATA / "pdf" / "scanned" / rec["file"], settings=settings)
        seconds = time.perf_counter() - t0
        first, last = (int(x) for x in rec["source_page_range"].split("-"))
        src = pymupdf.open(DATA / "pdf" / "wiki" / f"{rec['page_id']}.pdf")
        gold = Counter(_TOKEN.findall(" ".join(src[i].get_text() for i in range(first - 1, last))
                                      .lower()))
        got = Counter(_TOKEN.findall(" ".join(p.text for p in pd.pages).lower()))
        found = sum(min(n, got[w]) for w, n in gold.items())
        total += sum(gold.values())
        hit += found
        per_doc.append({"file": rec["file"], "pages": len(pd.pages), "words": sum(gold.values()),
                        "recall": found / max(sum(gold.values()), 1),
                        "seconds_per_page": seconds / max(len(pd.pages), 1),
                        "row_units": sum(u.kind == "row" for u in pd.units)})
    return {"documents": len(index), "word_recall": hit / max(total, 1), "per_document": per_doc}


def check_real(settings: Settings) -> dict:
    import pymupdf

    files = sorted((DATA / "pdf" / "real").glob("*.pdf"))
    out = []
    for f in files:
        rec: dict = {"file": f.name}
        try:
            pd = parse(f, settings=settings)
        except IngestError as exc:
            rec.update(status="failed", reason=str(exc))
            out.append(rec)
            continue
        doc = pymupdf.open(f)
        table_pages = []
        for page in doc:
            finder = page.find_tables(use_layout=False)
            if finder and finder.tables:
                table_pages.append(page.number + 1)
        row_pages = sorted({u.page for u in pd.units if u.kind == "row"})
        rec.update(status="ingested", pages=len(pd.pages), units=len(pd.units),
                   tables=len(pd.tables), row_pages=row_pages, finder_table_pages=table_pages,
                   missing=[p for p in table_pages if p not in row_pages],
                   warnings=pd.warnings[:3])
        out.append(rec)
    ok = all(r["status"] == "ingested" or r.get("reason") for r in out)
    missing = sum(len(r.get("missing", [])) for r in out)
    return {"files": len(out), "all_ingested_or_clear": ok,
            "ingested": sum(r["status"] == "ingested" for r in out),
            "finder_table_pages_without_rows": missing, "per_file": out}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("check", choices=["wiki", "scanned", "real", "all"])
    ap.add_argument("--limit", type=int, default=None, help="first N wiki PDFs only")
    ap.add_argument("--layout", choices=["onnx", "rules"], default=None)
    ap.add_argument("--json", dest="json_out", default=None)
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    settings = Settings()
    if args.layout:
        settings = settings.model_copy(update={"pdf_layout": args.layout})
    result = {}
    if args.check in ("wiki", "all"):
        result["wiki"] = check_wiki(settings, args.limit)
    if args.check in ("scanned", "all"):
        result["scanned"] = check_scanned(settings)
    if args.check in ("real", "all"):
        result["real"] = check_real(settings)
    for name, res in result.items():
        summary = {k: v for k, v in res.items() if not k.startswith("per_")}
        print(name, json.dumps(summary, indent=1))
        if args.verbose:
            for rec in next(v for k, v in res.items() if k.startswith("per_")):
                print("  ", json.dumps(rec, ensure_ascii=False))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(result, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
