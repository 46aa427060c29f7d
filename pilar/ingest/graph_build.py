"""Build a document's slice of the entity-linked assertion graph (PILAR §3.2,
§3.3, App. E.2-E.5) from what the parsers returned.

:func:`build_graph` runs once per document, after parsing and before any
store is touched (ingest never knows the stores; cross-document SAME_AS is
:func:`pilar.graph.linking.link_across`, at write time):

1. the page's entity: the infobox title, else the document title (when it is
   not just the file name), else the subject of the first copular sentence;
2. table assertions from every :class:`~pilar.model.TableGrid`
   (:func:`pilar.ingest.assertions.table_assertions`);
3. text assertions from paragraph, list item, definition and caption
   supports: through the LLM endpoint when ``Settings.llm_base_url`` and
   ``llm_model`` are set (:class:`pilar.ingest.llm.TextExtractor`), else
   rule-based (:func:`pilar.ingest.assertions.text_assertions`);
4. visual assertions for PDF table and figure crops when a VLM is
   configured (:class:`pilar.ingest.llm.VisualExtractor`, QC of App. E.4);
   with no VLM (the default) there are none;
5. mentions from titles, headings, table key cells and entity-typed cells,
   name-like table headers, captions, infobox subjects and capitalised spans
   (a one-word span only when the document names it elsewhere as well, or
   the alias table knows it), aliases the text declares; then the
   within-document clustering of :class:`pilar.ingest.entities.EntityResolver`;
6. identifier codes in every support (``QC-09``, ``IMO 9811427``, initials
   such as ``TVR``) as entities of type ``code``
   (:func:`pilar.ingest.codes.code_entities`), the links multi-hop chains run
   through.

Adds a few milliseconds per page with the rule-based extractor; LLM/VLM
calls cost what the endpoint costs (failures become warnings, never errors).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from pilar.config import Settings
from pilar.ingest.assertions import (AssertionBuilder, generic_title, split_sentences,
                                     table_assertions, text_assertions)
from pilar.ingest.codes import code_entities
from pilar.ingest.entities import EntityResolver, load_aliases
from pilar.ingest.names import (alias_pairs, capitalised_spans, entity_surface, model_names,
                                normalise)
from pilar.ingest.predicates import load_inventory
from pilar.ingest.quantities import band_entities
from pilar.model import ParsedDocument, Support

__all__ = ["build_graph", "TEXT_KINDS"]

TEXT_KINDS = frozenset({"paragraph", "list_item", "definition", "caption"})
"""Support kinds that text assertions are read from."""
_SPAN_KINDS = TEXT_KINDS | {"heading", "figure", "footnote"}


def build_graph(parsed: ParsedDocument, settings: Settings | None = None,
                source: bytes | None = None) -> ParsedDocument:
    """Fill ``parsed.assertions`` and ``parsed.entities`` (in place; returns
    ``parsed``). ``source`` is the file's bytes, needed only to render PDF
    crops for the VLM. Extraction problems (LLM/VLM errors, refusals,
    malformed output) are appended to ``parsed.warnings``; raises
    :class:`~pilar.errors.ConfigError` only for an unreadable predicate
    inventory or alias table."""
    settings = settings or Settings()
    inventory = load_inventory(settings.predicates_path)
    aliases = load_aliases(settings.aliases_path)
    resolver = EntityResolver(aliases, settings.link_threshold_doc)
    doc_id = parsed.document.doc_id
    builder = AssertionBuilder(doc_id, resolver, inventory)
    blocks = [s for s in parsed.supports if s.kind in TEXT_KINDS]

    subject, subject_type = _page_entity(parsed, blocks, inventory)
    if subject:
        anchor = _anchor(parsed, subject)
        if anchor:
            resolver.mention(subject, subject_type, anchor)

    rows: dict[int, dict[int, str]] = {}
    for s in parsed.supports:
        p = s.provenance
        if s.kind == "row" and p.table_index is not None and p.row is not None:
            rows.setdefault(p.table_index, {})[p.row] = s.support_id
    fallback_subject = subject or parsed.document.title
    for grid in parsed.tables:
        own = grid.kind == "infobox" and (not grid.title or generic_title(grid.title) or
                                          normalise(grid.title) == normalise(fallback_subject))
        table_assertions(builder, grid, rows.get(grid.table_index, {}), fallback_subject,
                         subject_type if own or grid.kind != "infobox" else "thing")

    spans = {s.support_id: capitalised_spans(s.text) for s in parsed.supports
             if s.kind in _SPAN_KINDS}
    if settings.llm_enabled:
        from pilar.ingest.llm import TextExtractor

        TextExtractor(settings, inventory).extract(builder, blocks, parsed.warnings)
    else:
        for s in blocks:
            text_assertions(builder, s, subject, subject_type, settings.assertions_per_block,
                            spans[s.support_id])

    if settings.vlm_enabled:
        from pilar.ingest.llm import VisualExtractor

        VisualExtractor(settings, inventory).extract(builder, parsed, source, subject,
                                                     parsed.warnings)

    _text_mentions(parsed.supports, spans, resolver, aliases)
    parsed.entities = (resolver.resolve() + code_entities(parsed.supports)
                       + band_entities(parsed, rows))
    parsed.assertions = builder.finish()
    return parsed


def _real_title(parsed: ParsedDocument) -> str | None:
    doc = parsed.document
    title = (doc.title or "").strip()
    if not title or title == Path(doc.uri or "").stem or title.startswith("<"):
        return None
    return title


def _page_entity(parsed: ParsedDocument, blocks: list[Support], inventory
                 ) -> tuple[str | None, str]:
    """(name, type) of the entity the page is about (see the module docstring)."""
    box = next((g for g in parsed.tables if g.kind == "infobox" and g.title
                and not generic_title(g.title)), None)
    name = entity_surface(box.title) if box else None
    name = name or _real_title(parsed)
    if not name:
        name = next((n for n in map(_lead_subject, blocks[:3]) if n), None)
    if not name:
        return None, "thing"
    hints: Counter[str] = Counter()
    for grid in parsed.tables:
        if grid.kind != "infobox":
            continue
        for r, kind in enumerate(grid.row_kinds):
            if kind == "keyvalue":
                pred = inventory.lookup(grid.cells[r][0].text)
                if pred in inventory.subject_types:
                    hints[inventory.subject_types[pred]] += 1
    return name, hints.most_common(1)[0][0] if hints else "thing"


def _lead_subject(s: Support) -> str | None:
    """The name opening a paragraph's first sentence when a copula or a
    parenthesis follows it (``"X is a ..."``, ``"X (born 1960) ..."``)."""
    if s.kind != "paragraph":
        return None
    first = split_sentences(s.text)[:1]
    spans = capitalised_spans(first[0]) if first else []
    if not spans or spans[0][1] != 0:
        return None
    rest = first[0][spans[0][2]:].lstrip()
    return spans[0][0] if rest.startswith(("is ", "was ", "are ", "were ", "(")) else None


def _anchor(parsed: ParsedDocument, name: str) -> str | None:
    """The support that best names the page's entity: a heading or block
    holding the name, else the first infobox row, else the first support."""
    key = normalise(name)
    for s in parsed.supports[:50]:
        if s.kind in ("heading", "paragraph") and key in normalise(s.text):
            return s.support_id
    for s in parsed.supports:
        if s.kind == "row":
            return s.support_id
    return parsed.supports[0].support_id if parsed.supports else None


def _text_mentions(supports: list[Support], spans_of: dict[str, list[tuple[str, int, int]]],
                   resolver: EntityResolver, aliases) -> None:
    """Capitalised spans, the models they name with a number
    (:func:`~pilar.ingest.names.model_names`: "Megalift 65" beside
    "Megalift") and declared aliases of the text supports. One-word
    spans count only when the document names them elsewhere too (a table
    cell, a longer span), as a known person's surname, or in the alias table."""
    deferred: list[tuple[str, str]] = []
    for s in supports:
        spans = spans_of.get(s.support_id)
        if spans is None:
            continue
        for surface, _, _ in spans:
            if " " in surface:
                resolver.mention(surface, "thing", s.support_id)
            else:
                deferred.append((surface, s.support_id))
        for model in model_names(s.text, spans):
            resolver.mention(model, "thing", s.support_id)
        if s.kind != "heading":
            for name, alias in alias_pairs(s.text, spans):
                resolver.declare_alias(name, alias)
    if not deferred:
        return
    known = set(resolver.keys)
    known.update(k.rsplit(" ", 1)[-1] for k, t in zip(resolver.keys, resolver.types)
                 if t == "person" and " " in k)
    known.update(normalise(b) for _, b in resolver.declared)
    for surface, sid in deferred:
        key = normalise(surface)
        if key in known or aliases.get(key) is not None:
            resolver.mention(surface, "thing", sid)
