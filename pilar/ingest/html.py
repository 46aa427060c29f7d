"""HTML ingestion: one page of main-content text, faithful table grids and
structure-completed evidence units (Tessera §3.3).

:func:`parse_html` decodes the bytes (BOM, then a declared charset, then
UTF-8, then windows-1252 so no byte is lost), parses them with lxml's HTML
parser (never the XML parser: no entity expansion, no DTD, no network or file
access, also for ``.xhtml``) and walks the tree once, iteratively (no Python
recursion, so 20,000 nested elements are fine):

- dropped: scripts, styles, ``nav``, hidden elements (``display:none``,
  ``hidden``; collapsed ``NavContent`` / ``mw-collapsible`` blocks are kept),
  edit links, citation marks (``sup.reference``), reference lists, sort keys,
  link-only navboxes and sidebars (kept when they hold a ``table.wikitable``),
  tables of contents, maintenance boxes;
- headings build the section path (page title > h2 > h3 ...), kept on every
  provenance and unit context;
- paragraphs, list items, ``dt``/``dd`` definitions and captions become block
  units; data tables and infoboxes become :class:`~pilar.model.TableGrid`
  (via :func:`pilar.ingest.tables.build_grid`) and one row unit per body /
  key-value row; layout tables (one row or column, or holding block content,
  and not ``wikitable``/``infobox``) are read as ordinary flow.

Table numbering: ``TableGrid.table_index`` counts the grids emitted, in
document order (a nested table comes right after its enclosing one);
``TableGrid.wikitable_index`` is the position among *all* ``table.wikitable``
elements of the document in document order, nested included, hidden or not —
how WikiTableQuestions numbers a page's tables.
"""

from __future__ import annotations

import dataclasses
import re

from lxml import etree

from pilar.config import Settings
from pilar.errors import IngestError
from pilar.ingest.footnotes import has_mark, note_lines
from pilar.ingest.html_cells import (bold, holds_wikitable, parse_span, short_list, table_rows,
                                     trailing_sup)
from pilar.ingest.html_decode import decode_html, strip_prolog
from pilar.ingest.limits import over_limit
from pilar.ingest.tables import SourceCell, build_grid, inherit
from pilar.ingest.units import add_support, block_units, render_cell, row_units
from pilar.model import Document, Page, ParsedDocument, Support, TableGrid, Unit, UnitKind

__all__ = ["parse_html"]

PAGE = 1
"""HTML documents have exactly one page."""

_XPATH_INDEX = re.compile(r"\[(\d+)\]")
_BR = "\x1f"  # line-break marker inside gathered text (never valid in HTML text)
_SPACE = re.compile(r"\s")
_CHUNK = 1 << 18

_DROP_TAGS = frozenset({
    "script", "style", "noscript", "template", "head", "title", "nav", "button", "select",
    "option", "input", "textarea", "iframe", "object", "embed", "svg", "canvas", "audio",
    "video", "map", "link", "meta", "img", "area", "source"})
_DROP_CLASSES = frozenset({
    "mw-editsection", "editsection", "reference", "reflist", "references", "refbegin",
    "sortkey", "toc", "toctoggle", "mw-cite-backlink", "navbar", "catlinks", "printfooter",
    "mw-jump-link", "metadata", "ambox", "mbox-small", "portal", "sistersitebox",
    "navbox", "vertical-navbox", "sidebar", "hatnote", "dablink", "rellink"})
_LINK_BOXES = frozenset({"navbox", "vertical-navbox", "sidebar"})
_COLLAPSIBLE = frozenset({"NavContent", "NavFrame", "mw-collapsible", "mw-collapsible-content",
                          "collapsible"})
_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
_BLOCK_KIND: dict[str, UnitKind] = {
    "p": "paragraph", "li": "list_item", "dt": "definition", "dd": "definition",
    "figcaption": "caption", "caption": "caption"}
_BLOCKS = frozenset({
    "p", "li", "dt", "dd", "figcaption", "caption", "div", "ul", "ol", "dl", "blockquote",
    "pre", "section", "article", "main", "header", "footer", "aside", "figure", "center",
    "body", "html", "form", "fieldset", "address", "hr", "table", "tbody", "thead", "tfoot",
    "tr", "td", "th", "details", "summary", "menu", "legend"})
_CAPTION_CLASSES = ("thumbcaption", "gallerytext")
_CELL_BREAKS = frozenset({
    "br", "p", "div", "li", "dt", "dd", "ul", "ol", "dl", "tr", "td", "th", "table",
    "blockquote", "pre", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "caption", "center"})
_TEXT_BEFORE = ("boolean(preceding::text()[normalize-space()]"
                "[not(ancestor::script or ancestor::style or ancestor::noscript)])")
_LAYOUT_BLOCKS = ("p", "ul", "ol", "dl", "table", "blockquote", "h2", "h3", "h4", "h5", "h6")


def parse_html(data: bytes, doc: Document, settings: Settings) -> ParsedDocument:
    """Parse HTML ``data`` into one :class:`~pilar.model.Page` (number 1,
    width = height = 0, text = main-content text with table rows as
    ``"cell | cell"`` lines), block and row units with their supports, and
    the table grids (Tessera §3.3).

    The document's title is the ``<title>``, else the first ``<h1>``, else
    the bold subject of the first paragraph (MediaWiki's lead sentence),
    else the heading of any level the page opens with (no text before it),
    else ``doc.title`` (the file stem for files). Units are at most
    ``settings.max_unit_chars`` long (long text is split); spans are capped
    at ``settings.max_span``. Caps, truncated input and charset guesses are
    reported in ``ParsedDocument.warnings``.

    Raises :class:`~pilar.errors.IngestError` (one-line reason) when the
    input is over ``settings.max_html_bytes``, cannot be parsed, or holds no
    text content (e.g. only scripts and styles).
    """
    if not data or data.isspace():
        raise IngestError("empty file")
    if len(data) > settings.max_html_bytes:
        raise over_limit("HTML", len(data), settings.max_html_bytes, "PILAR_MAX_HTML_BYTES")
    warnings: list[str] = []
    utf8, encoding, guessed = decode_html(data)
    if guessed:
        warnings.append(f"no usable charset declared; decoded as {encoding}")
    utf8 = strip_prolog(utf8)
    # The HTML parser never reads a DTD or expands entities; huge_tree lifts
    # libxml2's 10 MB text-node and 256-level depth limits (the input is
    # already capped at max_html_bytes), which would otherwise drop text.
    parser = etree.HTMLParser(encoding="utf-8", remove_comments=True, remove_pis=True,
                              no_network=True, huge_tree=True, collect_ids=False,
                              default_doctype=False)
    try:
        root = etree.fromstring(utf8, parser)
    except (etree.ParserError, etree.XMLSyntaxError, ValueError) as exc:
        raise IngestError(f"unparsable HTML: {_one_line(exc)}") from None
    if root is None:
        raise IngestError("unparsable HTML: no elements")
    too_deep = any("Excessive depth" in e.message for e in parser.error_log)
    if too_deep:
        warnings.append("HTML nested deeper than the parser limit (2048); deeper content dropped")
    reader = _Reader(root, doc, settings, warnings)
    reader.run()
    if not reader.units:
        if too_deep:
            raise IngestError("no text content: HTML nested deeper than the parser limit (2048)")
        raise IngestError("no text content (only scripts, styles or markup)")
    document = dataclasses.replace(doc, title=reader.title, n_pages=1)
    page = Page(doc_id=doc.doc_id, number=PAGE, text="\n".join(reader.lines))
    return ParsedDocument(document=document, pages=[page], supports=reader.supports,
                          tables=reader.tables, units=reader.units, warnings=warnings)


def _flag_name(el) -> bool:
    """A hidden country name linked right after a flag icon (Wikipedia's
    flag templates): the only text of what the flag shows, so kept."""
    link = el.getparent()
    if link is None or link.tag != "a":
        return False
    icon = link.getprevious()
    return icon is not None and "flagicon" in (icon.get("class") or "")


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200] or type(exc).__name__


def _collapse(text: str) -> str:
    """Whitespace runs to one space, trimmed. Big text goes in chunks cut at
    whitespace: one split() would hold every word at once (~50 bytes each)."""
    n = len(text)
    if n <= _CHUNK:
        return " ".join(text.split())
    parts = []
    start = 0
    while start < n:
        m = _SPACE.search(text, min(start + _CHUNK, n))
        end = m.start() if m else n
        part = " ".join(text[start:end].split())
        if part:
            parts.append(part)
        start = end + 1
    return " ".join(parts)


def _lines(text: str) -> str:
    """Collapse whitespace; ``_BR`` markers become single ``"\\n"``."""
    if _BR not in text:
        return _collapse(text)
    out = []
    for line in text.split(_BR):
        line = _collapse(line)
        if line:
            out.append(line)
    return "\n".join(out)


class _Reader:
    """One pass over a parsed page, collecting units, supports, grids and
    the page's text lines."""

    def __init__(self, root, doc: Document, settings: Settings, warnings: list[str]):
        self.root = root
        self.tree = root.getroottree()
        self.doc_id = doc.doc_id
        self.max_chars = settings.max_unit_chars
        self.max_span = settings.max_span
        self.warnings = warnings
        self.supports: list[Support] = []
        self.units: list[Unit] = []
        self.tables: list[TableGrid] = []
        self.lines: list[str] = []
        self.buf: list[str] = []
        self.sections: list[tuple[int, str]] = []
        self.pending_dt: list | None = None  # [text, css path, used by a dd]
        self.wikitables: dict[object, int] = {}
        self.data_tables: dict[object, bool] = {}  # table element -> is a data table
        n = 0
        for table in root.iter("table"):
            if "wikitable" in (table.get("class") or ""):
                self.wikitables[table] = n
                n += 1
        self.title = self._title() or doc.title
        self.section_path: tuple[str, ...] = (self.title,) if self.title else ()

    # -- document level -------------------------------------------------

    def _title(self) -> str:
        for el in self.root.iter("title"):
            text = " ".join((el.text or "").split())
            if text:
                return text
        body = self.root.find("body")
        body = body if body is not None else self.root
        for el in body.iter("h1"):
            text = self._text(el).replace("\n", " ")
            if text:
                return text
        # MediaWiki fragments have neither: the lead sentence bolds the subject.
        for para in body.iterchildren("p"):
            if not self._text(para):
                continue
            bold = next(para.iter("b"), None)
            text = self._text(bold).replace("\n", " ") if bold is not None else ""
            if 0 < len(text) <= 200:
                return text
            break
        # A page that opens with a heading of another level is named by it.
        first = next((el for el in body.iter(*_HEADINGS) if not any(
            self._dropped(a, a.tag) for a in (el, *el.iterancestors()))), None)
        if first is not None and not first.xpath(_TEXT_BEFORE):
            return self._text(first).replace("\n", " ")[:200]
        return ""

    def run(self) -> None:
        body = self.root.find("body")
        top = body if body is not None else self.root
        walker = etree.iterwalk(top, events=("start", "end"))
        stack: list[tuple[object, UnitKind, int]] = []  # open blocks: element, kind, path depth
        buf = self.buf
        # CSS path of the current element, kept as we go (getpath is O(siblings)).
        path = self.path = [] if top is self.root else ["html"]
        counts: list[dict[str, int]] = [{}]
        skip = None
        for event, el in walker:
            if event == "start":
                tag = el.tag
                if not isinstance(tag, str):
                    walker.skip_subtree()
                    skip = el
                    continue
                seen = counts[-1]
                n = seen[tag] = seen.get(tag, 0) + 1
                if self._dropped(el, tag):
                    walker.skip_subtree()
                    skip = el
                    continue
                path.append(tag if tag == "body" or tag == "html" else f"{tag}:nth-of-type({n})")
                counts.append({})
                if tag in _HEADINGS:
                    self._flush(stack)
                    self._heading(el, tag)
                    walker.skip_subtree()
                    skip = el
                    path.pop()
                    counts.pop()
                    continue
                if tag == "table":
                    self._flush(stack)
                    if self._is_data_table(el):
                        self._settle_dt()
                        self._tables(el, table_rows(el))
                        walker.skip_subtree()
                        skip = el
                        path.pop()
                        counts.pop()
                        continue
                if tag in _BLOCKS:
                    self._flush(stack)
                    kind = _BLOCK_KIND.get(tag)
                    if kind is None:
                        if tag == "div" and self._is_caption(el):
                            kind = "caption"
                        else:
                            kind = stack[-1][1] if stack else "paragraph"
                            if kind == "caption":
                                kind = "paragraph"
                    stack.append((el, kind, len(path)))
                elif tag == "br":
                    buf.append(" ")
                if el.text:
                    buf.append(el.text)
            else:
                if el is skip:
                    skip = None
                else:
                    if stack and stack[-1][0] is el:
                        self._flush(stack)
                        stack.pop()
                        if el.tag == "dl":
                            self._settle_dt()
                    path.pop()
                    counts.pop()
                if el.tail:
                    buf.append(el.tail)
        self._flush(stack)
        self._settle_dt()

    # -- element tests ----------------------------------------------------

    def _dropped(self, el, tag: str) -> bool:
        if tag in _DROP_TAGS:
            return True
        if tag == "span" and el.get("id") == "coordinates":
            return True  # the page-title copy of the coordinates, shown at the top
        cls = el.get("class")
        tokens = cls.split() if cls else ()
        for token in tokens:
            if token in _DROP_CLASSES:
                if token in _LINK_BOXES and holds_wikitable(el):
                    continue
                return True
        style = el.get("style")
        if style and "none" in style or el.get("hidden") is not None:
            style = (style or "").replace(" ", "").lower()
            if "display:none" in style or el.get("hidden") is not None:
                return not (any(t in _COLLAPSIBLE for t in tokens) or _flag_name(el))
        return False

    @staticmethod
    def _is_caption(el) -> bool:
        cls = el.get("class")
        return bool(cls) and any(c in cls for c in _CAPTION_CLASSES)

    def _is_data_table(self, table) -> bool:
        """wikitable / infobox, or at least 2 rows that have 2 columns, or
        one column under a header cell (a ``th`` first row over ``td``
        values), without block content in the cells (short lists, such as
        two time ranges of one day, are values, not blocks; a nested data
        table is its own grid, not a block, when a row below the first has
        values of its own in two cells: else the table only frames it);
        anything else is layout, read as flow. Judged once per table,
        nested tables first (no recursion)."""
        known = self.data_tables.get(table)
        if known is None:
            for sub in reversed(list(table.iter("table"))):  # innermost first
                if sub not in self.data_tables:
                    self.data_tables[sub] = self._judge_table(sub)
            known = self.data_tables[table]
        return known

    def _judge_table(self, table) -> bool:
        """:meth:`_is_data_table` for a table whose nested tables are judged."""
        cls = table.get("class") or ""
        if "wikitable" in cls or "infobox" in cls:
            return True
        rows = table_rows(table)
        if len(rows) < 2:
            return False
        if max(len(row) for row in rows) < 2 and not (
                any(cell.tag == "th" for cell, _ in rows[0])
                and any(cell.tag == "td" for row in rows[1:] for cell, _ in row)):
            return False
        walker = etree.iterwalk(table, events=("start",))
        next(walker)
        nested = False
        for _, el in walker:
            tag = el.tag
            if tag == "table":
                if not self.data_tables[el]:
                    return False
                nested = True
                walker.skip_subtree()
            elif tag in _LAYOUT_BLOCKS and (tag not in ("ul", "ol") or not short_list(el)):
                return False
        # a frame around tables is layout: values of its own in two cells of a row below the first
        return not nested or any(
            sum(1 for cell, _ in row if next(cell.iter("table"), None) is None
                and "".join(cell.itertext()).strip()) >= 2 for row in rows[1:])

    # -- text ---------------------------------------------------------------

    def _here(self, depth: int | None = None) -> str:
        """CSS path of the element the walk is in (or of its ancestor at
        ``depth``)."""
        return " > ".join(self.path if depth is None else self.path[:depth])

    def _css(self, el) -> str:
        """CSS path of any element (lxml's getpath: O(siblings), so only for
        elements off the walk, like nested tables)."""
        path = self.tree.getpath(el)
        return _XPATH_INDEX.sub(r":nth-of-type(\1)", path[1:]).replace("/", " > ")

    def _text(self, el, nested: list | None = None) -> str:
        """Visible text of ``el``: dropped elements skipped, line breaks
        (``br``, blocks, list items) as ``"\\n"``. Data tables inside are
        appended to ``nested`` and left out (they get their own grid)."""
        if len(el) == 0:
            text = el.text
            return _collapse(text) if text else ""
        parts = [el.text] if el.text else []
        walker = etree.iterwalk(el, events=("start", "end"))
        next(walker)
        skip = None
        for event, sub in walker:
            if event == "start":
                tag = sub.tag
                if not isinstance(tag, str) or self._dropped(sub, tag):
                    walker.skip_subtree()
                    skip = sub
                    continue
                if tag == "table" and nested is not None and self._is_data_table(sub):
                    nested.append(sub)
                    parts.append(_BR)
                    walker.skip_subtree()
                    skip = sub
                    continue
                if tag in _CELL_BREAKS:
                    parts.append(_BR)
                if sub.text:
                    parts.append(sub.text)
            else:
                if sub is el:
                    break
                if sub is skip:
                    skip = None
                elif sub.tag in _CELL_BREAKS and sub.tag != "br":
                    parts.append(_BR)
                if sub.tail:
                    parts.append(sub.tail)
        return _lines("".join(parts))

    # -- blocks -----------------------------------------------------------

    def _flush(self, stack) -> None:
        buf = self.buf
        if not buf:
            return
        text = _collapse("".join(buf))
        buf.clear()
        if not text:
            return
        el, kind, depth = stack[-1] if stack else (None, "paragraph", 0)
        tag = el.tag if el is not None else ""
        css = self._here(depth) if depth else None
        if tag == "dt":
            self._settle_dt()
            self.pending_dt = [text, css, False]
            return
        if tag == "dd" and self.pending_dt is not None:
            text = f"{self.pending_dt[0]}: {text}"
            self.pending_dt[2] = True
        else:
            self._settle_dt()
        self._block(kind, text, css)

    def _settle_dt(self) -> None:
        """Emit a ``dt`` no ``dd`` used (a pseudo-heading) as its own unit."""
        pending, self.pending_dt = self.pending_dt, None
        if pending is not None and not pending[2]:
            self._block("definition", pending[0], pending[1])

    def _block(self, kind: UnitKind, text: str, css: str | None) -> None:
        units = block_units(kind, text, self.supports, doc_id=self.doc_id, page=PAGE,
                            page_title=self.title, section_path=self.section_path,
                            css_path=css, max_chars=self.max_chars)
        self.units.extend(units)
        self.lines.extend(u.text for u in units)

    def _heading(self, el, tag: str) -> None:
        self._settle_dt()
        text = self._text(el).replace("\n", " ")
        if not text:
            return
        level = int(tag[1])
        sections = self.sections
        if text == self.title and (level == 1 or not sections):
            sections.clear()
        else:
            while sections and sections[-1][0] >= level:
                sections.pop()
            sections.append((level, text[:self.max_chars]))
        self.section_path = ((self.title,) if self.title else ()) + tuple(t for _, t in sections)
        add_support(self.supports, kind="heading", text=text[:self.max_chars],
                    doc_id=self.doc_id, page=PAGE, section_path=self.section_path,
                    css_path=self._here())
        self.lines.append(text)

    # -- tables -----------------------------------------------------------

    def _tables(self, table, rows) -> None:
        """Grid and row units for ``table`` and, right after it, every data
        table nested in its cells (depth first, iteratively). A nested
        table is its own grid: the enclosing cell keeps only its own text
        and lists the nested grid's index in ``GridCell.tables``."""
        todo: list[tuple[object, list, TableGrid | None, SourceCell | None]] = [
            (table, rows, None, None)]
        first = len(self.tables)
        while todo:
            el, rows, parent, holder = todo.pop()
            nested: list[tuple[object, SourceCell]] = []
            grid = self._grid(el, rows, nested, self._here() if parent is None else self._css(el))
            if parent is not None and holder is not None and holder.origin is not None:
                inherit(grid, parent, *holder.origin)
                cell = parent.cells[holder.origin[0]][holder.origin[1]]
                cell.tables = (*cell.tables, grid.table_index)
            self.tables.append(grid)
            for sub, cell in reversed(nested):
                todo.append((sub, table_rows(sub), grid, cell))
        for grid in self.tables[first:]:
            self._emit_rows(grid)

    def _grid(self, table, rows, nested: list, path: str) -> TableGrid:
        caption = ""
        for child in table:
            if child.tag == "caption":
                caption = self._text(child).replace("\n", " ")
                break
        notes = self._notes(table, rows)
        source: list[list[SourceCell]] = []
        for i, cells in enumerate(rows):
            row: list[SourceCell] = []
            for cell, cell_path in cells:
                tag = cell.tag
                found: list = []
                text = self._text(cell, found)
                sc = SourceCell(text=text, is_header=tag == "th" or cell_path.startswith("thead"),
                                rowspan=parse_span(cell.get("rowspan")),
                                colspan=parse_span(cell.get("colspan")),
                                css_path=f"{path} > {cell_path}",
                                emphasis=tag == "td" and bool(text) and bold(cell),
                                marker=trailing_sup(cell) if notes else "")
                nested.extend((sub, sc) for sub in found)
                row.append(sc)
            source.append(row)
        cls = table.get("class") or ""
        grid = build_grid(source, table_index=len(self.tables), doc_id=self.doc_id, page=PAGE,
                          caption=caption, section_path=self.section_path,
                          kind="infobox" if "infobox" in cls else "table", css_path=path,
                          max_span=self.max_span, warnings=self.warnings, notes=notes)
        grid.wikitable_index = self.wikitables.get(table)
        return grid

    def _notes(self, table, rows) -> dict[str, str]:
        """Footnotes of ``table`` (:func:`~pilar.ingest.footnotes.note_lines`)
        from its one-cell rows (a ``tfoot`` or a full-width row) and the
        first blocks after it (after its wrapper when it ends one), up to
        the next heading or table; ``{}`` when no cell could hold a marker
        (no ``sup``, no superscript or note symbol)."""
        if table.find(".//sup") is None and not has_mark("".join(table.itertext())):
            return {}
        notes: dict[str, str] = {}
        for cells in rows:
            if len(cells) == 1:
                notes.update(note_lines(self._text(cells[0][0])))
        anchor = table
        while anchor.getnext() is None and anchor.getparent() is not None \
                and anchor.getparent().tag not in ("body", "td", "th"):
            anchor = anchor.getparent()
        for n, el in enumerate(anchor.itersiblings()):
            if n >= 3 or not isinstance(el.tag, str) or el.tag in _HEADINGS or el.tag == "table" \
                    or next(el.iter("table"), None) is not None:
                break
            if not self._dropped(el, el.tag):
                for key, text in note_lines(self._text(el)).items():
                    notes.setdefault(key, text)
        return notes

    def _emit_rows(self, grid: TableGrid) -> None:
        if grid.caption:
            self.units.extend(block_units(
                "caption", grid.caption, self.supports, doc_id=self.doc_id, page=PAGE,
                page_title=self.title, section_path=self.section_path,
                css_path=f"{grid.css_path} > caption", max_chars=self.max_chars))
            self.lines.append(grid.caption)
        self.units.extend(row_units(grid, self.supports, self.title, max_chars=self.max_chars))
        for row in grid.cells:
            texts = []
            last = None
            for cell in row:
                if cell is not last and cell.text:
                    texts.append(render_cell(cell.text))
                last = cell
            if texts:
                self.lines.append(" | ".join(texts))
