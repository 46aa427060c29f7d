"""Grid fidelity of HTML ingestion against the WikiTableQuestions gold tables.

For every page of ``wtq/dev`` the gold table is the ``table_index``-th
``table.wikitable`` of the page (document order, nested included), i.e. the
grid whose ``wikitable_index`` equals it. A CSV body row (every row after the
header row) counts as found when one row unit of that grid holds every
non-empty value of the row: both sides lowercased with whitespace collapsed,
each value a substring of the unit's cells joined by ``" | "``.

    python bench/html_grid_fidelity.py [--data ../shared/data] [--show 20] [--json OUT]

Prints the share of body rows found (target >= 98%) and the failures by
cause; ``--show`` prints that many failing rows with the closest unit. Also
prints how many gold tables have every CSV header label among the grid's
combined header paths (``" ".join(path)``; WTQ joins multi-row headers with
a newline and drops some empty or image columns, so the check is one way).
WTQ keeps footnote markers in values and labels (``"2006*"``); a cell whose
marker pilar split off and linked to its note counts in its printed form
(:func:`pilar.ingest.footnotes.printed`).
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pilar.config import Settings  # noqa: E402
from pilar.ingest import new_document  # noqa: E402
from pilar.ingest.footnotes import printed  # noqa: E402
from pilar.ingest.html import parse_html  # noqa: E402


def norm(text: str) -> str:
    return " ".join(text.lower().split())


def read_csv(path: Path) -> list[list[str]]:
    with path.open(encoding="utf-8", newline="") as f:
        return list(csv.reader(f, escapechar="\\", doublequote=False))


def check_page(meta: dict, base: Path, settings: Settings) -> tuple[int, list[dict], bool]:
    """(body rows, failures, header labels agree) of one page; a failure
    names its cause."""
    data = (base / meta["html"]).read_bytes()
    parsed = parse_html(data, new_document(data, meta["page_id"], "text/html"), settings)
    gold = read_csv(base / meta["csv"])
    body = gold[1:]
    grid = next((t for t in parsed.tables if t.wikitable_index == meta["table_index"]), None)
    if grid is None:
        return len(body), [{"page": meta["page_id"], "cause": "gold table not emitted",
                            "row": row} for row in body], False
    paths = {norm(" ".join(path)) for path in grid.header_paths}
    heads = [r for r, kind in enumerate(grid.row_kinds) if kind == "header"]
    paths |= {norm(" ".join(path[:-1] + (form,)))
              for c, path in enumerate(grid.header_paths) if path
              for form in printed(grid.cells[r][c] for r in heads
                                  if grid.cells[r][c].text == path[-1])}
    header_ok = all(norm(h) in paths for h in gold[0] if norm(h))
    texts = [norm(" | ".join((*u.cells, *printed(grid.cells[u.row_index])))) for u in parsed.units
             if u.kind == "row" and u.table_index == grid.table_index]
    failures = []
    for i, row in enumerate(body, start=1):
        values = [norm(v) for v in row if norm(v)]
        if not values or any(all(v in t for v in values) for t in texts):
            continue
        best = max(texts, key=lambda t: sum(v in t for v in values), default="")
        missing = [v for v in values if v not in best]
        if [norm(v) for v in row] == [norm(h) for h in gold[0]]:
            cause = "header row repeated in the body (a header, not a unit)"
        elif len(missing) == len(values):
            cause = "row not found"
        elif any(k == "group" for k in grid.row_kinds) and len(set(values)) == 1:
            cause = "group row (label, not a unit)"
        else:
            cause = "cells differ"
        failures.append({"page": meta["page_id"], "csv_row": i, "cause": cause,
                         "missing": missing, "closest": best[:300]})
    return len(body), failures, header_ok


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--show", type=int, default=0, help="print this many failing rows")
    ap.add_argument("--json", type=Path, help="write the figures and failures here")
    args = ap.parse_args()
    base = args.data / "wtq" / "dev"
    pages = [json.loads(line) for line in (base / "pages.jsonl").open(encoding="utf-8")]
    settings = Settings()
    total = 0
    failures: list[dict] = []
    per_page: Counter[str] = Counter()
    headers_ok = 0
    for meta in pages:
        n, fails, header_ok = check_page(meta, base, settings)
        headers_ok += header_ok
        total += n
        failures.extend(fails)
        per_page[meta["page_id"]] += len(fails)
    found = total - len(failures)
    causes = Counter(f["cause"] for f in failures)
    print(f"pages: {len(pages)}  CSV body rows: {total}  found: {found} "
          f"({100 * found / total:.2f}%)")
    for cause, n in causes.most_common():
        print(f"  {cause}: {n}")
    print(f"gold tables whose CSV header labels all match a header path: {headers_ok} "
          f"of {len(pages)}")
    worst = [(p, n) for p, n in per_page.most_common(8) if n]
    if worst:
        print("pages with most misses: " + ", ".join(f"{p} ({n})" for p, n in worst))
    for f in failures[:args.show]:
        print(json.dumps(f, ensure_ascii=False))
    if args.json:
        args.json.write_text(json.dumps({"pages": len(pages), "rows": total, "found": found,
                                         "share": found / total, "causes": dict(causes),
                                         "headers_ok": headers_ok,
                                         "failures": failures}, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()
