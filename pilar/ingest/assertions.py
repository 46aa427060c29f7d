"""Assertions from tables and text (PILAR §3.2 "shared assertion space",
App. E.5 graph assembly).

Table assertions (deterministic, from :class:`~pilar.model.TableGrid`):

- body rows: subject = the row's key cell (:func:`key_column`: a column of
  row headers, else the leftmost of the first four columns whose values are
  mostly text and distinct), predicate = the column's header path through
  :meth:`~pilar.ingest.predicates.PredicateInventory.for_header`, object =
  the cell's text (line breaks read ``" / "``), one assertion per other
  non-empty cell; a row with a single non-empty cell yields none;
- key-value rows (infoboxes, th+td tables), two-cell infobox rows and
  the field rows of a two-column ``Parameter | Value`` table (a key the
  inventory knows beside a column headed by a literal: :func:`_field_row`):
  subject = the table's entity (the infobox title, else the page's entity),
  predicate = the key, object = the values;
- qualifiers: ``caption``, ``table_title``, ``section`` (path joined by
  ``" > "``), ``group`` (group row label), ``cell`` (the object cell's id:
  provenance down to the cell), ``header_note`` (``"2010"`` of
  ``"Population (2010)"``). Supports: the row's ``row`` support.

Text assertions, rule-based (the embedded default when no LLM is
configured), at most ``limit`` (5) per block, predicates closed
(:meth:`~pilar.ingest.predicates.PredicateInventory.closed`):

- key-value blocks: ``"Released: September 13, 1994"`` -> (page entity,
  released, September 13, 1994);
- copular sentences: ``"X is/was a Y"`` -> (X, is_a, Y); ``"X was born in
  Y"`` and every other inventory phrase ending in a preposition -> (X,
  born_in, Y); ``"He/She ..."`` opening a sentence reads the page's entity
  when it is a person;
- appositives: ``"X, the president of Z,"`` -> (X, leader, Z);
  ``"X, a Y,"`` -> (X, is_a, Y); ``"X (born DATE)"`` -> (X, born_on, DATE).

Entities: subjects and entity-typed objects are registered as mentions with
the :class:`~pilar.ingest.entities.EntityResolver`; :meth:`AssertionBuilder.finish`
fills ``subject_entity``/``object_entity`` once the resolver has clustered.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from pilar.ingest.entities import EntityResolver
from pilar.ingest.names import capitalised_spans, clean_surface
from pilar.ingest.predicates import PredicateInventory, predicate_key
from pilar.ingest.units import row_spans
from pilar.model import Assertion, Modality, Support, TableGrid

__all__ = ["AssertionBuilder", "key_column", "key_of_columns", "table_assertions", "text_assertions",
           "object_mention", "sentence_bounds", "split_sentences", "header_path",
           "generic_title"]

MAX_OBJECT_CHARS = 500
_COPULA = re.compile(r"\s*(?:\([^()]{0,120}\)\s*)?,?\s*(is|was|are|were|has been|had been)\s+")
_ARTICLE = re.compile(r"(?:a|an|the)\s+", re.I)
_CLAUSE_END = re.compile(r"\s*(?:[,;:(\[]|\s(?:which|who|whom|whose|that|where|when|while|but|"
                         r"and is|and was|and has|since|after|before|because|although)\s)")
_NOUN_END = re.compile(r"\s(?:founded|based|located|formed|born|established|created|owned|"
                       r"known|headquartered|released|written|directed|produced|consisting|"
                       r"in|on|at|from|with|by|for|during|until|between|as|to|of the)\s")
_KEY_VALUE = re.compile(r"^(?P<k>[A-Z][^:\n]{0,40}?)\s*:\s+(?P<v>\S.{0,300})$", re.S)
_BORN = re.compile(r"\(\s*(?:born|b\.)\s+(?P<d>[^();]{4,40}?)\s*[;)]")
_APPOS_OF = re.compile(r",\s+(?:the|a|an)\s+(?P<role>[a-z][a-z\- ]{1,40}?\s+of)\s+")
_APPOS_ISA = re.compile(r",\s+(?:a|an)\s+(?P<what>[a-z][\w\- ]{2,60}?),")
_SENT = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"“(])")
_PRONOUNS = frozenset(("He", "She"))
_NUMBERED = re.compile(r"(?i)^(?:table|figure|fig|chart|plate|exhibit|step|note|section)\b")
_GENERIC_TITLES = frozenset(("senior career", "youth career", "international career",
                             "career", "statistics", "honours", "honors", "overview",
                             "summary", "general", "history", "identifiers", "details"))
_ABBREV_END = re.compile(r"(?:\b[A-Z]|\b(?:St|Mr|Mrs|Ms|Dr|Jr|Sr|Co|Inc|Ltd|Mt|Ft|No|vs|Gen|Col|"
                         r"Lt|Rev|Hon|Prof|U\.S|U\.K))\.$")


@dataclass(slots=True)
class _Draft:
    assertion: Assertion
    subject_mention: int | None
    object_mention: int | None


class AssertionBuilder:
    """Numbers a document's assertions (``f"{doc_id}:a{n}"``) and keeps the
    mention numbers of their subjects and objects until entity ids are known."""

    def __init__(self, doc_id: str, resolver: EntityResolver, inventory: PredicateInventory):
        self.doc_id = doc_id
        self.resolver = resolver
        self.inventory = inventory
        self.drafts: list[_Draft] = []

    def add(self, subject: str, predicate: str, obj: str, modality: Modality,
            supports: tuple[str, ...], qualifiers: dict[str, str], *, extractor: str,
            subject_mention: int | None = None, object_mention: int | None = None,
            confidence: float = 1.0, grounded: bool = True) -> Assertion:
        a = Assertion(assertion_id=f"{self.doc_id}:a{len(self.drafts)}", doc_id=self.doc_id,
                      subject=subject, predicate=predicate, object=obj[:MAX_OBJECT_CHARS],
                      modality=modality, supports=supports,
                      qualifiers={k: v for k, v in qualifiers.items() if v},
                      confidence=confidence, grounded=grounded, extractor=extractor)
        self.drafts.append(_Draft(a, subject_mention, object_mention))
        return a

    def count(self, modality: Modality | None = None) -> int:
        return sum(1 for d in self.drafts if modality in (None, d.assertion.modality))

    def finish(self) -> list[Assertion]:
        """The assertions with entity ids filled in (call after
        :meth:`EntityResolver.resolve`)."""
        ids = self.resolver.mention_entity
        out = []
        for d in self.drafts:
            if d.subject_mention is not None:
                d.assertion.subject_entity = ids[d.subject_mention] or None
            if d.object_mention is not None:
                d.assertion.object_entity = ids[d.object_mention] or None
            out.append(d.assertion)
        return out


# -- tables -------------------------------------------------------------------


def header_path(grid: TableGrid, c0: int, c1: int) -> tuple[str, ...]:
    """Header path of a cell spanning columns ``c0..c1``: the first column's
    path when they agree, else their common prefix."""
    paths = grid.header_paths
    first = paths[c0] if c0 < len(paths) else ()
    if c0 == c1:
        return first
    prefix = []
    for level in zip(*paths[c0:c1 + 1]):
        if all(x == level[0] for x in level):
            prefix.append(level[0])
        else:
            break
    return tuple(prefix)


def _texty(text: str) -> bool:
    letters = digits = 0
    for ch in text:
        if ch.isalpha():
            letters += 1
        elif ch.isdigit():
            digits += 1
    return letters >= 3 and letters > digits or (letters >= 2 and digits == 0)


def key_column(grid: TableGrid) -> int:
    """The column holding each body row's key (0-based): column 0 when most
    body rows start with a header cell; else :func:`key_of_columns` over the
    body cells (a cell spanning columns counts in its first); else 0."""
    body = [r for r, k in enumerate(grid.row_kinds) if k == "body"]
    if not body or grid.n_cols <= 1:
        return 0
    if sum(1 for r in body if grid.cells[r][0].is_header) * 2 > len(body):
        return 0
    columns = [[grid.cells[r][c].text if grid.cells[r][c].origin[1] == c else "" for r in body]
               for c in range(min(grid.n_cols, 4))]
    found = key_of_columns(columns)
    return 0 if found is None else found


def key_of_columns(columns: Sequence[Sequence[str]]) -> int | None:
    """Of ``columns`` (each one text per body row, "" for an empty cell), the
    leftmost of the first four whose filled values (>= 60% of rows) are mostly
    text (>= 60%, median at most 60 characters) and distinct (>= 80%); else
    the leftmost mostly-text one; None when no column qualifies. Used by
    table assertions (:func:`key_column`) and by unit selection, which reads
    the same key cells from row units (Tessera §3.4)."""
    fallback = None
    for c, column in enumerate(columns[:4]):
        values = [v for v in column if v]
        if not values or len(values) < 0.6 * len(column):
            continue
        text_share = sum(1 for v in values if _texty(v)) / len(values)
        if text_share < 0.6 or sorted(len(v) for v in values)[len(values) // 2] > 60:
            continue
        if len(set(values)) >= 0.8 * len(values):
            return c
        if fallback is None:
            fallback = c
    return fallback


def _one_line(text: str) -> str:
    if "\n" not in text:
        return text
    return " / ".join(line.strip() for line in text.split("\n") if line.strip())


def object_mention(b: AssertionBuilder, text: str, type_: str, support: str) -> int | None:
    """Register the entity mention(s) of an object cell: each line of a
    multi-line cell, each comma part of a place (``"Harlem, New York"``);
    returns the first one's number."""
    if type_ == "value":
        return None
    if type_ in ("place", "country") and ", " in text:
        text = text.replace(", ", "\n")
    if "\n" not in text:
        return b.resolver.mention(text, type_, support)
    first = None
    for line in text.split("\n"):
        m = b.resolver.mention(line, type_, support)
        first = m if first is None else first
    return None if first is None else first


def table_assertions(b: AssertionBuilder, grid: TableGrid, row_supports: dict[int, str],
                     subject: str, subject_type: str = "thing") -> int:
    """Add the assertions of ``grid`` (see the module docstring); ``row_supports``
    maps row numbers to ``row`` support ids, ``subject`` names the table's
    entity (for key-value rows). Returns the number added."""
    inv = b.inventory
    quals = {"caption": grid.caption, "table_title": grid.title,
             "section": " > ".join(grid.section_path)}
    key_c = key_column(grid)
    key_pred, _ = inv.for_header(grid.header_paths[key_c] if key_c < len(grid.header_paths)
                                 else (), key_c)
    key_type = inv.object_type(key_pred)
    infobox = grid.kind == "infobox"
    table_subject = (grid.title if infobox and grid.title and not generic_title(grid.title)
                     else subject) or subject
    table_subject_mention = None
    added = 0
    first_support = None
    columns: dict[tuple[int, int], tuple[str, str, str]] = {}

    def column(c0: int, c1: int) -> tuple[str, str, str]:
        """(predicate, header note, object type) of a cell spanning c0..c1."""
        got = columns.get((c0, c1))
        if got is None:
            pred, note = inv.for_header(header_path(grid, c0, c1), c0)
            got = columns[(c0, c1)] = (pred, note, inv.object_type(pred))
        return got

    for r, kind in enumerate(grid.row_kinds):
        sid = row_supports.get(r)
        if sid is None or kind not in ("body", "keyvalue"):
            continue
        first_support = first_support or sid
        cells = [(cell, c0, c1) for cell, c0, c1 in row_spans(grid.cells[r]) if cell.text]
        if len(cells) < 2:
            continue
        q = {**quals, "group": grid.group_labels[r] or ""}
        if kind == "keyvalue" or infobox or _field_row(inv, grid, cells, column):
            if table_subject_mention is None:
                table_subject_mention = b.resolver.mention(table_subject, subject_type, sid)
            key = cells[0][0]
            pred, note = inv.for_header((clean_surface(key.text),), 0)
            value = " / ".join(_one_line(cell.text) for cell, _, _ in cells[1:])
            if pred == "also_known_as":
                for cell, _, _ in cells[1:]:
                    for line in cell.text.split("\n"):
                        b.resolver.declare_alias(table_subject, line)
            om = object_mention(b, cells[1][0].text, inv.object_type(pred), sid) \
                if len(cells) == 2 else None
            b.add(table_subject, pred, value, "table", (sid,),
                  {**q, "cell": cells[1][0].cell_id, "header_note": note}, extractor="table",
                  subject_mention=table_subject_mention, object_mention=om)
            added += 1
            continue
        key = next((t for t in cells if t[1] <= key_c <= t[2]), cells[0])
        sm = b.resolver.mention(key[0].text, key_type, sid) if key_type != "value" else None
        subj = _one_line(key[0].text)
        for cell, c0, c1 in cells:
            if cell is key[0]:
                continue
            pred, note, otype = column(c0, c1)
            om = object_mention(b, cell.text, otype, sid)
            b.add(subj, pred, _one_line(cell.text), "table", (sid,),
                  {**q, "cell": cell.cell_id, "header_note": note}, extractor="table",
                  subject_mention=sm, object_mention=om)
            added += 1
    if first_support:
        for path in grid.header_paths:
            if path and inv.lookup(path[-1]) is None and _name_like_header(path[-1]):
                b.resolver.mention(path[-1], "thing", first_support)
    return added


def _field_row(inv: PredicateInventory, grid: TableGrid, cells: list, column) -> bool:
    """Is a body row of ``grid`` a field of a record, as a key-value row is:
    a two-column table whose value column's header names a literal
    (``Parameter | Value``) and whose row's first cell names a predicate
    of the inventory (``Manufacturer | Ambrel Machinery Co``: the
    manufacturer of the table's subject, an organisation, not a "value"
    of a thing called "Manufacturer")? ``column`` gives ``(predicate,
    note, object type)`` of a cell span."""
    if len(grid.header_paths) != 2 or len(cells) != 2:
        return False
    value, span = cells[1][0], cells[1][1:]
    return (bool(value.text) and column(*span)[2] == "value"
            and inv.lookup(clean_surface(cells[0][0].text)) is not None)


def generic_title(text: str) -> bool:
    """Is an infobox title a section label (``"Personal information"``,
    ``"Club information"``, ``"Senior career"``) rather than a name?"""
    key = predicate_key(text)
    return not key or key in _GENERIC_TITLES or key.endswith(("information", "details"))


def _name_like_header(text: str) -> bool:
    core = text.replace(".", "").strip()
    if 2 <= len(core) <= 5 and core.isalpha() and core.isupper():
        return True
    words = core.split()
    return 2 <= len(words) <= 5 and sum(1 for w in words if w[:1].isupper()) >= 2


# -- text ---------------------------------------------------------------------

def sentence_bounds(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` offsets of the sentences of a block: split after
    ``.!?`` before an upper-case start, not after an initial or a common
    abbreviation (``St.``, ``Dr.``, ``U.S.``)."""
    out: list[tuple[int, int]] = []
    start = 0
    for m in _SENT.finditer(text):
        if _ABBREV_END.search(text, max(start, m.start() - 8), m.start()):
            continue
        out.append((start, m.start()))
        start = m.end()
    out.append((start, len(text)))
    return [(a, b) for a, b in out if text[a:b].strip()]


def split_sentences(text: str) -> list[str]:
    """The sentences of :func:`sentence_bounds`, stripped."""
    return [text[a:b].strip() for a, b in sentence_bounds(text)]


def _clause(text: str, max_words: int = 12, noun: bool = False) -> str:
    m = _CLAUSE_END.search(text)
    text = text[:m.start()] if m else text
    m = _NOUN_END.search(text) if noun else None
    text = text[:m.start()] if m else text
    text = text.strip().rstrip(".!?")
    words = text.split()
    return " ".join(words[:max_words]) if len(words) <= max_words else ""


def text_assertions(b: AssertionBuilder, support: Support, page_subject: str | None,
                    page_type: str, limit: int = 5,
                    spans: list[tuple[str, int, int]] | None = None) -> int:
    """Rule-based text assertions of one block support (see the module
    docstring); at most ``limit``. ``spans`` are the block's
    :func:`~pilar.ingest.entities.capitalised_spans` (computed when omitted).
    Returns the number added."""
    text = support.text
    all_spans = capitalised_spans(text) if spans is None else spans
    sid = support.support_id
    quals = {"section": " > ".join(support.provenance.section_path)}
    inv = b.inventory
    added = 0

    def add(subj: str, phrase: str, obj: str, rule: str) -> None:
        nonlocal added
        obj = obj.strip().strip(",;")
        if not subj or not obj or added >= limit or len(obj) > 300:
            return
        pred, known = inv.closed(phrase)
        sm = b.resolver.mention(subj, inv.subject_types.get(pred, "thing")
                                if subj != page_subject else page_type, sid)
        om = object_mention(b, obj, inv.object_type(pred), sid)
        b.add(subj, pred, obj, "text", (sid,),
              {**quals, "predicate_text": "" if known else phrase, "rule": rule},
              extractor="rules", subject_mention=sm, object_mention=om, confidence=0.6)
        added += 1

    kv = _KEY_VALUE.match(text) if page_subject and support.kind != "caption" else None
    if kv and len(kv.group("k").split()) <= 5 and not _NUMBERED.match(kv.group("k")):
        add(page_subject, kv.group("k"), _one_line(kv.group("v")), "key_value")
        return added
    for a, e in sentence_bounds(text):
        if added >= limit:
            break
        sentence = text[a:e]
        spans = [(sf, s0 - a, s1 - a) for sf, s0, s1 in all_spans if a <= s0 and s1 <= e]
        subj = None
        rest_at = 0
        if spans and spans[0][1] <= 4:
            subj, rest_at = spans[0][0], spans[0][2]
        elif page_subject and page_type == "person" and sentence.split(" ", 1)[0] in _PRONOUNS:
            subj, rest_at = page_subject, len(sentence.split(" ", 1)[0])
        if subj:
            born = _BORN.match(sentence[rest_at:].lstrip())
            if born:
                add(subj, "born", born.group("d"), "born")
            cop = _COPULA.match(sentence, rest_at)
            if cop:
                after = sentence[cop.end():]
                art = _ARTICLE.match(after)
                bare = after[art.end():] if art else after
                low = bare.lower()
                phrase = next((p for p in inv.verb_phrases if low.startswith(p + " ")), None)
                if phrase:
                    add(subj, phrase, _clause(bare[len(phrase) + 1:]), "copular")
                elif art and art.group(0).lower().strip() in ("a", "an"):
                    add(subj, "is a", _clause(bare, noun=True), "copular")
        for m in _APPOS_OF.finditer(sentence):
            s_span = next((s for s in spans if s[2] == m.start()), None)
            o_span = next((s for s in spans if s[1] == m.end()), None)
            if s_span and o_span:
                add(s_span[0], m.group("role"), o_span[0], "appositive")
        for m in _APPOS_ISA.finditer(sentence):
            s_span = next((s for s in spans if s[2] == m.start()), None)
            if s_span:
                add(s_span[0], "is a", _clause(m.group("what"), noun=True), "appositive")
    return added
