"""Structure-completed evidence units (Tessera §3.3), shared by HTML and PDF.

Two kinds of unit, each backed by one :class:`~pilar.model.Support` with its
:class:`~pilar.model.Provenance`:

- block units (:func:`block_units`): a paragraph, list item, definition or
  caption; text longer than ``max_chars`` is split at whitespace (a single
  longer token is cut) into several units;
- row units (:func:`row_units`): one per body or key-value row of a
  :class:`~pilar.model.TableGrid` (tables and infoboxes).

``completed_text`` puts the unit's context first, then its content::

    Gladys Knight > Discography > Singles | Year: 1961 | Title: Every Beat of My Heart
        | Peak chart positions > US: 6          (one line)
    Gladys Knight > Early life | Knight was born in Atlanta ...

context = page title > section path > table caption / title > group label
(consecutive repeats dropped); a row's cells are paired with their header
paths (``"Header > Sub: value"``), a key-value row reads ``"Key: value"``,
line breaks inside a cell read ``" / "``; the footnotes of a value's or
its header's marker follow the pair in brackets (``"Depth (m): 6.5 [a: At
low tide]"``; the value itself without its marker).

Ids: the n-th support appended to a page's ``supports_out`` list gets
``support_id = f"{doc_id}:{page}:s{n}"``, its provenance
``f"{doc_id}:{page}:p{n}"`` and its unit ``f"{doc_id}:{page}:u{n}"`` — so the
caller keeps one ``supports_out`` list per page (or per document) and ids
never collide. Cell ids come from the grid (``{doc_id}:t{table}:r{row}c{col}``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pilar.model import BBox, GridCell, Provenance, Support, SupportKind, TableGrid, Unit, UnitKind

__all__ = ["add_support", "block_units", "row_units", "split_text", "render_cell", "row_spans",
           "DEFAULT_MAX_CHARS"]

DEFAULT_MAX_CHARS = 4000
"""Default ceiling on ``text`` and ``completed_text`` (``Settings.max_unit_chars``)."""

_ELLIPSIS = "…"


def render_cell(text: str) -> str:
    """A cell's text on one line: line breaks read ``" / "``."""
    return text.replace("\n", " / ") if "\n" in text else text


def add_support(supports_out: list[Support], *, kind: SupportKind, text: str, doc_id: str,
                page: int, section_path: tuple[str, ...] = (), css_path: str | None = None,
                bbox: BBox | None = None, table_index: int | None = None,
                row: int | None = None, col: int | None = None,
                cell_ids: tuple[str, ...] = (), char_start: int | None = None,
                char_end: int | None = None) -> Support:
    """Append a :class:`Support` (and its :class:`Provenance`) numbered
    ``len(supports_out)`` and return it."""
    n = len(supports_out)
    prov = Provenance(provenance_id=f"{doc_id}:{page}:p{n}", doc_id=doc_id, page=page,
                      section_path=section_path, bbox=bbox, css_path=css_path,
                      table_index=table_index, row=row, col=col, cell_ids=cell_ids,
                      char_start=char_start, char_end=char_end)
    support = Support(support_id=f"{doc_id}:{page}:s{n}", doc_id=doc_id, kind=kind,
                      text=text, provenance=prov)
    supports_out.append(support)
    return support


def split_text(text: str, max_chars: int) -> list[tuple[int, int]]:
    """``(start, end)`` spans of ``text`` no longer than ``max_chars``, cut at
    the last space in each window (hard cut inside a longer token)."""
    if len(text) <= max_chars:
        return [(0, len(text))]
    spans = []
    start, n = 0, len(text)
    while start < n:
        end = start + max_chars
        if end >= n:
            spans.append((start, n))
            break
        cut = text.rfind(" ", start + max_chars // 2, end + 1)
        if cut <= start:
            spans.append((start, end))
            start = end
        else:
            spans.append((start, cut))
            start = cut + 1
    return spans


def block_units(kind: UnitKind, text: str, supports_out: list[Support], *, doc_id: str,
                page: int, page_title: str, section_path: tuple[str, ...] = (),
                css_path: str | None = None, bbox: BBox | None = None,
                max_chars: int = DEFAULT_MAX_CHARS) -> list[Unit]:
    """Block units (Tessera §3.3) for one paragraph / list item / definition
    / caption of normalised ``text``; appends their supports to
    ``supports_out``. Text longer than fits ``max_chars`` together with its
    context is split into several units (``char_start``/``char_end`` in the
    provenance locate each part in ``text``). Returns ``[]`` for empty text.
    """
    if not text:
        return []
    context = _dedupe((page_title, *section_path))
    prefix = " > ".join(context)
    room = max(max_chars - len(prefix) - 3, max_chars // 2)
    units = []
    spans = split_text(text, room)
    for start, end in spans:
        part = text[start:end] if len(spans) > 1 else text
        support = add_support(supports_out, kind=kind, text=part, doc_id=doc_id, page=page,
                              section_path=section_path, css_path=css_path, bbox=bbox,
                              char_start=start if len(spans) > 1 else None,
                              char_end=end if len(spans) > 1 else None)
        completed = f"{prefix} | {part}" if prefix else part
        units.append(Unit(unit_id=_unit_id(support), doc_id=doc_id, page=page, kind=kind,
                          text=part, completed_text=completed[:max_chars],
                          support_id=support.support_id, context=context))
    return units


def row_units(grid: TableGrid, supports_out: list[Support], page_title: str, *,
              max_chars: int = DEFAULT_MAX_CHARS, rows: range | None = None) -> list[Unit]:
    """Row units (Tessera §3.3): one per ``"body"`` or ``"keyvalue"`` row of
    ``grid`` that has any text, each with a ``"row"`` support appended to
    ``supports_out``.

    A unit's ``cells`` are the row's distinct non-empty cells (a colspan cell
    counts once; a rowspan cell repeats in every row it covers; line breaks
    kept as ``"\\n"``), ``headers`` the header path of each (``" > "``
    joined; for a key-value row the key), ``context`` its completed context
    (page title, ``grid.section_path``, caption/title, group label). The
    provenance carries ``table_index``, ``row`` (``col`` is ``None``), the
    cells' ids, the row's CSS path (HTML) and the union of the cells' bboxes
    (PDF). ``text`` and ``completed_text`` are cut at ``max_chars``.
    ``rows`` limits the units to those rows (a table continued on the next
    page adds its rows there); each unit cites its row's page
    (``grid.row_pages``, else ``grid.page``).
    """
    units: list[Unit] = []
    base = (page_title, *grid.section_path, grid.caption, grid.title)
    heads = [r for r, kind in enumerate(grid.row_kinds) if kind == "header"]

    def header_notes(c0: int, c1: int) -> list[str]:  # footnotes of the column's header cells
        return [n for r in heads for cell, _, _ in row_spans(grid.cells[r][c0:c1 + 1])
                for n in cell.notes]
    for r in rows if rows is not None else range(grid.n_rows):
        row_kind = grid.row_kinds[r]
        if row_kind != "body" and row_kind != "keyvalue":
            continue
        page = grid.row_pages[r] if grid.row_pages else grid.page
        spans = [(cell, c0, c1) for cell, c0, c1 in row_spans(grid.cells[r])
                 if cell.text or cell.tables]
        if not any(cell.text for cell, _, _ in spans):
            continue  # nothing but nested grids: their rows are their own units
        if row_kind == "keyvalue":
            key = render_cell(_value(spans[0][0]))
            key = key.rstrip(" :") or key  # "Born:" reads "Born: value"
            values = spans[1:]
            value = " / ".join(render_cell(_value(cell)) for cell, _, _ in values)
            pair = f"{key}: {value}" if value else key
            pairs = [_noted(pair, [n for cell, _, _ in spans for n in cell.notes])]
            headers = tuple([" > ".join(grid.header_paths[spans[0][1]])] + [key] * len(values))
            text = pairs[0]
        else:
            pairs = []
            header_list = []
            for cell, c0, c1 in spans:
                path = " > ".join(_span_path(grid.header_paths, c0, c1))
                if grid.row_kinds[cell.origin[0]] == "header":
                    path = ""  # a header cell reaching into the row labels it: no "X: X"
                header_list.append(path)
                value = render_cell(_value(cell))
                notes = [*(header_notes(c0, c1) if path else ()), *cell.notes]
                pairs.append(_noted(f"{path}: {value}" if path else value, notes))
            headers = tuple(header_list)
            text = " | ".join(render_cell(_value(cell)) for cell, _, _ in spans)
        context = _dedupe((*base, grid.group_labels[r]))
        completed = " | ".join((" > ".join(context), *pairs))
        if len(completed) > max_chars:
            completed = completed[:max_chars - 1] + _ELLIPSIS
        if len(text) > max_chars:
            text = text[:max_chars - 1] + _ELLIPSIS
        cells = [cell for cell, _, _ in spans]
        support = add_support(
            supports_out, kind="row", text=text, doc_id=grid.doc_id, page=page,
            section_path=grid.section_path, css_path=_row_css_path(cells, r, grid.css_path),
            bbox=_union(cell.bbox for cell in cells), table_index=grid.table_index, row=r,
            cell_ids=tuple(cell.cell_id for cell in cells))
        units.append(Unit(unit_id=_unit_id(support), doc_id=grid.doc_id, page=page,
                          kind="row", text=text, completed_text=completed,
                          support_id=support.support_id, context=context,
                          table_index=grid.table_index, row_index=r, headers=headers,
                          cells=tuple(_value(cell) for cell in cells)))
    return units


def _noted(pair: str, notes: list[str]) -> str:
    """``pair`` followed by its footnotes in brackets (``"Depth (m): 6.5
    [a: At low tide]"``), each once."""
    notes = list(dict.fromkeys(notes))
    return f"{pair} [{'; '.join(notes)}]" if notes else pair


def _value(cell: GridCell) -> str:
    """A cell's text, followed by ``"[table N]"`` for each grid nested in it
    (its values are that grid's rows, never this row's)."""
    refs = " ".join(f"[table {i}]" for i in cell.tables)
    if not refs:
        return cell.text
    return f"{cell.text} {refs}" if cell.text else refs


def _unit_id(support: Support) -> str:
    head, _, n = support.support_id.rpartition(":s")
    return f"{head}:u{n}"


def _dedupe(items: Iterable[str | None]) -> tuple[str, ...]:
    out: list[str] = []
    for item in items:
        if item and (not out or out[-1] != item):
            out.append(item)
    return tuple(out)


def row_spans(row: Sequence[GridCell]) -> list[tuple[GridCell, int, int]]:
    """(cell, first col, last col) for each distinct cell of a grid row."""
    out: list[tuple[GridCell, int, int]] = []
    for c, cell in enumerate(row):
        if out and out[-1][0] is cell:
            out[-1] = (cell, out[-1][1], c)
        else:
            out.append((cell, c, c))
    return out


def _span_path(paths: Sequence[tuple[str, ...]], c0: int, c1: int) -> tuple[str, ...]:
    """Header path of a cell spanning columns c0..c1: the shared path, else
    the common prefix followed by the distinct sub-headers it covers joined
    by ``" / "`` (``("Memory", "Size / Type")``; at most three, else the
    prefix alone)."""
    first = paths[c0] if c0 < len(paths) else ()
    if c0 == c1:
        return first
    if c0 == 0 and c1 >= len(paths) - 1:
        return ()  # a cell across the whole row belongs to no column
    others = paths[c0 + 1:c1 + 1]
    if all(p == first for p in others):
        return first
    prefix: list[str] = []
    for level in zip(first, *others):
        if all(x == level[0] for x in level):
            prefix.append(level[0])
        else:
            break
    k = len(prefix)
    labels = _dedupe(" > ".join(p[k:]) for p in (first, *others) if len(p) > k)
    if 0 < len(labels) <= 3:
        return (*prefix, " / ".join(labels))
    return tuple(prefix)


def _row_css_path(cells: Sequence[GridCell], r: int, table_path: str | None) -> str | None:
    for cell in cells:
        if cell.origin[0] == r and cell.css_path:
            return cell.css_path.rpartition(" > ")[0]
    return table_path


def _union(boxes: Iterable[BBox | None]) -> BBox | None:
    out = None
    for b in boxes:
        if b is None:
            continue
        out = b if out is None else (min(out[0], b[0]), min(out[1], b[1]),
                                     max(out[2], b[2]), max(out[3], b[3]))
    return out
