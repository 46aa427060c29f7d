"""Records to Cypher parameter rows and back, for the Neo4j graph backend
(:mod:`pilar.graph.neo4j`): the batches one document's write sends
(:func:`batch_rows`), and the :mod:`pilar.model` records rebuilt from
the values its reads return (:func:`support_of`, :func:`unit_of`,
:func:`assertion_of`, :func:`document_of`). Neo4j properties hold no maps
or tuples: section paths and bboxes go as lists, qualifiers and table grids
as JSON text; ``None`` properties are left out.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from typing import Any

import orjson

from pilar.graph import neo4j_cypher as cy
from pilar.model import (Assertion, Document, Entity, ParsedDocument, Provenance, Support,
                         Unit, UnitStats, to_jsonable)

BATCH = 5000
"""Rows per UNWIND statement."""


class Rows(list):
    """The rows of one statement (sent as a list) whose ``repr`` gives only
    their number: the driver (neo4j 6.4) formats every RUN's parameters for
    its debug log even when that log is off, which for the rows of 100 dev
    pages took 0.37 s of client CPU, 8% of their write's time."""

    def __repr__(self) -> str:
        return f"<{len(self)} rows>"


def batches(rows: list, size: int = BATCH) -> Iterator[Rows]:
    """``rows`` in slices of at most ``size``."""
    for i in range(0, len(rows), size):
        yield Rows(rows[i:i + size])


def _json(value: Any) -> str:
    """``value`` (records, dicts, lists, scalars) as JSON text, by orjson:
    records as their fields' objects, tuples as lists, UTF-8 unescaped (what
    ``json.dumps(to_jsonable(value), ensure_ascii=False)`` gave, without the
    spaces; the 489 table grids and 28,007 qualifiers of 100 dev pages took
    0.36 s of CPU, now 0.06 s)."""
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()


def node_props(record: Any, names: tuple[str, ...]) -> dict[str, Any]:
    """The properties ``names`` of a flat record (a Unit, a Provenance) as
    a node takes them: tuples as lists, ``None`` left out, read straight off
    the attributes (``to_jsonable`` walked every string of every tuple: the
    rows of 100 dev pages took 0.95 s of CPU, now 0.82 s)."""
    out = {}
    for name in names:
        value = getattr(record, name)
        if value is not None:
            out[name] = list(value) if type(value) is tuple else value
    return out


def prov_row(p: Provenance) -> dict[str, Any]:
    """A Provenance node's properties."""
    return node_props(p, cy.PROVENANCE_FIELDS)


def batch_rows(docs: list[ParsedDocument]) -> list[tuple[str, list]]:
    """``(query, rows)`` of every layer of all ``docs`` after their Document
    nodes, in write order (pages before what points at them; entities of all
    documents before any link to them), each layer's rows of all documents
    together; each query UNWINDs ``$rows``. The cyclic garbage collector is
    paused meanwhile: the rows hold no cycles, and its full passes over a
    process's other objects took more than half of this CPU (100 dev pages,
    batches of 10: 0.43 s, 0.20 s paused)."""
    merged: list[tuple[str, list]] = []
    collecting = gc.isenabled()
    gc.disable()
    try:
        for parsed in docs:
            for i, (query, rows) in enumerate(document_rows(parsed)):
                if i == len(merged):
                    merged.append((query, []))
                merged[i][1].extend(rows)
    finally:
        if collecting:
            gc.enable()
    return merged


def document_rows(parsed: ParsedDocument) -> list[tuple[str, list]]:
    """``(query, rows)`` of every layer of ``parsed`` after its Document
    node, in write order (pages before what points at them; the shapes of
    the rows are given above each query in :mod:`~pilar.graph.neo4j_cypher`);
    each query UNWINDs ``$rows``."""
    pages = [{"page_id": p.page_id, "doc_id": p.doc_id, "number": p.number,
              "width": p.width, "height": p.height, "text": p.text} for p in parsed.pages]
    nxt = [[a.page_id, b.page_id] for a, b in zip(parsed.pages, parsed.pages[1:])]
    units_of: dict[str, list[dict[str, Any]]] = {}
    for i, u in enumerate(parsed.units):
        row = node_props(u, cy.UNIT_RECORD_FIELDS)
        if u.stats:
            row.update(stats_row(u.stats))
        row["seq"] = i
        units_of.setdefault(u.support_id, []).append(row)
    on_page: dict[str, list[dict[str, Any]]] = {p.page_id: [] for p in parsed.pages}
    for i, s in enumerate(parsed.supports):
        on_page.setdefault(f"{s.doc_id}:{s.provenance.page}", []).append({
            "prov": prov_row(s.provenance),
            "support": {"support_id": s.support_id, "doc_id": s.doc_id, "kind": s.kind,
                        "text": s.text, "role": s.role, "seq": i,
                        "provenance_id": s.provenance.provenance_id},
            "units": units_of.pop(s.support_id, [])})
    supports = [[pid, rows] for pid, rows in on_page.items() if rows]
    loose_units = [u for rows in units_of.values() for u in rows]
    tables = [{"table_id": f"{t.doc_id}:t{t.table_index}", "doc_id": t.doc_id,
               "table_index": t.table_index, "page": t.page,
               "grid": _json(t)} for t in parsed.tables]
    entities, mentioned = [], set()
    for e in parsed.entities:
        mentions = [sid for sid in dict.fromkeys(e.mentions) if (e.entity_id, sid) not in mentioned]
        mentioned.update((e.entity_id, sid) for sid in mentions)
        entities.append({"entity_id": e.entity_id, "name": e.name, "type": e.type,
                         "collection": e.collection, "aliases": sorted(set(e.aliases)),
                         "aliases_text": " ".join(sorted(set(e.aliases))),
                         "mentions": mentions})
    assertions = [{"props": {"assertion_id": a.assertion_id, "doc_id": a.doc_id,
                             "subject": a.subject, "predicate": a.predicate, "object": a.object,
                             "modality": a.modality,
                             "qualifiers": _json(a.qualifiers),
                             "confidence": a.confidence, "grounded": a.grounded,
                             "extractor": a.extractor, "seq": i},
                   "supports": list(dict.fromkeys(a.supports)),
                   "subject": a.subject_entity, "object": a.object_entity}
                  for i, a in enumerate(parsed.assertions)]
    same_as = [to_jsonable(link) for link in parsed.same_as]
    return [(cy.WRITE_PAGES, pages), (cy.WRITE_NEXT, nxt), (cy.WRITE_SUPPORTS, supports),
            (cy.WRITE_LOOSE_UNITS, loose_units), (cy.WRITE_TABLES, tables),
            (cy.WRITE_ENTITIES, entities), (cy.WRITE_ASSERTIONS, assertions),
            (cy.WRITE_SAME_AS, same_as)]


def support_of(support_id: str, doc_id: str, page: int, kind: str, text: str, role: str,
               provenance_id: str, section_path, bbox, css_path, table_index, row, col,
               cell_ids, char_start, char_end) -> Support:
    """A Support with its Provenance from the values of one read row (the
    column order of :data:`~pilar.graph.neo4j_cypher.SUPPORTS_BY_ID`)."""
    return Support(
        support_id=support_id, doc_id=doc_id, kind=kind, text=text, role=role,
        provenance=Provenance(
            provenance_id=provenance_id, doc_id=doc_id, page=page,
            section_path=tuple(section_path or ()), bbox=tuple(bbox) if bbox else None,
            css_path=css_path, table_index=table_index, row=row, col=col,
            cell_ids=tuple(cell_ids or ()), char_start=char_start, char_end=char_end))


def stats_row(st: UnitStats) -> dict[str, Any]:
    """A Unit node's statistics properties (the term counts as JSON text)."""
    return {"term_counts": _json(st.terms), "term_length": st.length,
            "line_tokens": st.tokens, "line_tokenizer": st.tokenizer}


def unit_of(doc_id: str, page: int, r: list) -> Unit:
    """A Unit of page ``page`` (with its statistics when stored) from one row
    of :data:`~pilar.graph.neo4j_cypher.UNITS_ON_PAGES`."""
    return Unit(unit_id=r[0], doc_id=doc_id, page=page, kind=r[1], text=r[2],
                completed_text=r[3], support_id=r[4], context=tuple(r[5] or ()),
                table_index=r[6], row_index=r[7], headers=tuple(r[8] or ()),
                cells=tuple(r[9] or ()),
                stats=None if r[10] is None else UnitStats(
                    terms=json.loads(r[10]), length=r[11], tokens=r[12], tokenizer=r[13]))


def assertion_of(r: dict[str, Any]) -> Assertion:
    """An Assertion from a record of :data:`~pilar.graph.neo4j_cypher.ASSERTION_RETURN`."""
    a = r["a"]
    return Assertion(assertion_id=a["assertion_id"], doc_id=a["doc_id"], subject=a["subject"],
                     predicate=a["predicate"], object=a["object"], modality=a["modality"],
                     qualifiers=json.loads(a["qualifiers"]), confidence=a["confidence"],
                     grounded=a["grounded"], extractor=a["extractor"], subject_entity=r["se"],
                     object_entity=r["oe"], supports=tuple(r["supports"]))


def entity_of(r: dict[str, Any]) -> Entity:
    """An Entity from a record of :data:`~pilar.graph.neo4j_cypher.ENTITY_RETURN`."""
    return Entity(r["id"], r["name"], r["type"], tuple(r["aliases"] or ()),
                  collection=r["collection"])


def document_of(r: dict[str, Any]) -> Document:
    """A Document from a record of :data:`~pilar.graph.neo4j_cypher.DOC_FIELDS`."""
    return Document(doc_id=r["d.doc_id"], uri=r["d.uri"], title=r["d.title"] or "",
                    media_type=r["d.media_type"], sha256=r["d.sha256"],
                    n_pages=r["d.n_pages"], ingested_at=r["d.ingested_at"] or "",
                    collection=r["d.collection"] or "default", status=r["d.status"] or "ready",
                    sources=list(r["d.sources"] or []))
