"""The Neo4j graph backend (production), on the official ``neo4j`` driver.

Layers as in DESIGN.md: (:Document), (:Page)-[:IN_DOCUMENT]->(:Document),
(:Page)-[:NEXT]->(:Page), (:Support)-[:HAS_PROVENANCE]->(:Provenance)
-[:ON_PAGE]->(:Page), (:Unit)-[:DERIVED_FROM]->(:Support), (:TableGrid), and
with the assertion graph (:Assertion), (:Entity). Each document is written
with UNWIND + MERGE batches inside ONE managed write transaction (the driver
retries transient failures, then the error surfaces as a
:class:`~pilar.errors.StoreError`), so a document is visible whole or not at
all. The Cypher lives in this module; the schema in ``migrations/neo4j``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Any

from pilar.errors import StoreError
from pilar.graph import add_expansion_rows
from pilar.migrations import migration_files
from pilar.model import (Assertion, Document, Entity, Page, ParsedDocument, Provenance, Support,
                         Unit, to_jsonable)

BATCH = 5000
_WORDS = re.compile(r"\w+", re.UNICODE)

_DOC_FIELDS = ("d.doc_id, d.uri, d.title, d.media_type, d.sha256, d.n_pages, d.ingested_at, "
               "d.collection, d.status")
_DOCUMENTS = f"""
MATCH (d:Document)
WHERE ($ids IS NULL OR d.doc_id IN $ids) AND ($collections IS NULL OR d.collection IN $collections)
  AND ($statuses IS NULL OR d.status IN $statuses)
RETURN {_DOC_FIELDS} ORDER BY d.ingested_at, d.uri
"""

# A document's own nodes are new in its transaction (its doc_id is the hash of
# its bytes and it is written whole or not at all), so their relationships are
# CREATEd; nodes are MERGEd on their keys, entities (shared) MERGEd as well.
_WRITE_DOCUMENT = "MERGE (d:Document {doc_id: $doc.doc_id}) SET d += $doc"
_WRITE_PAGES = """
UNWIND $rows AS row
MERGE (p:Page {page_id: row.page_id}) SET p += row
WITH p MATCH (d:Document {doc_id: p.doc_id}) CREATE (p)-[:IN_DOCUMENT]->(d)
"""
_WRITE_NEXT = """
UNWIND $rows AS row
MATCH (a:Page {page_id: row[0]}), (b:Page {page_id: row[1]}) CREATE (a)-[:NEXT]->(b)
"""
_WRITE_PROVENANCE = """
UNWIND $rows AS row
MERGE (n:Provenance {provenance_id: row.provenance_id}) SET n += row
WITH n MATCH (p:Page {page_id: n.doc_id + ':' + toString(n.page)}) CREATE (n)-[:ON_PAGE]->(p)
"""
_WRITE_SUPPORTS = """
UNWIND $rows AS row
MERGE (s:Support {support_id: row.support_id}) SET s += row
WITH s MATCH (p:Provenance {provenance_id: s.provenance_id}) CREATE (s)-[:HAS_PROVENANCE]->(p)
"""
_WRITE_UNITS = """
UNWIND $rows AS row
MERGE (u:Unit {unit_id: row.unit_id}) SET u += row
WITH u MATCH (s:Support {support_id: u.support_id}) CREATE (u)-[:DERIVED_FROM]->(s)
"""
_WRITE_TABLES = """
UNWIND $rows AS row
MERGE (t:TableGrid {table_id: row.table_id}) SET t += row
"""
_WRITE_ENTITIES = """
UNWIND $rows AS row
MERGE (e:Entity {entity_id: row.entity_id})
ON CREATE SET e.name = row.name, e.type = row.type, e.aliases = row.aliases,
              e.aliases_text = row.aliases_text
ON MATCH SET e.aliases = e.aliases + [a IN row.aliases WHERE NOT a IN e.aliases],
             e.aliases_text = reduce(t = '', a IN e.aliases | t + ' ' + a)
"""
_WRITE_MENTIONS = """
UNWIND $rows AS row
MATCH (e:Entity {entity_id: row[0]}), (s:Support {support_id: row[1]})
CREATE (e)-[:MENTIONED_IN]->(s)
"""
_WRITE_ASSERTIONS = """
UNWIND $rows AS row
MERGE (a:Assertion {assertion_id: row.assertion_id}) SET a += row
"""
_WRITE_SUPPORTED_BY = """
UNWIND $rows AS row
MATCH (a:Assertion {assertion_id: row[0]}), (s:Support {support_id: row[1]})
CREATE (a)-[:SUPPORTED_BY {role: row[2]}]->(s)
"""
_WRITE_SUBJECT_OF = """
UNWIND $rows AS row
MATCH (e:Entity {entity_id: row[0]}), (a:Assertion {assertion_id: row[1]})
CREATE (e)-[:SUBJECT_OF]->(a)
"""
_WRITE_OBJECT = """
UNWIND $rows AS row
MATCH (a:Assertion {assertion_id: row[0]}), (e:Entity {entity_id: row[1]})
CREATE (a)-[:OBJECT]->(e)
"""
_WRITE_SAME_AS = """
UNWIND $rows AS row
MATCH (a:Entity {entity_id: row.source}), (b:Entity {entity_id: row.target})
MERGE (a)-[r:SAME_AS]->(b) SET r.score = row.score, r.method = row.method
"""
_ENTITY_CANDIDATES = """
CALL db.index.fulltext.queryNodes('entity_names', $q) YIELD node, score
RETURN node.entity_id AS id, node.name AS name, node.type AS type, node.aliases AS aliases
LIMIT $limit
"""

_PAGE_SECTIONS = """
UNWIND $ids AS pid MATCH (:Page {page_id: pid})<-[:ON_PAGE]-(p:Provenance)
RETURN DISTINCT pid, p.section_path AS path
"""
# one record per page, its supports (units) as lists in document order: the
# driver decodes nested lists far faster than one row of maps per support,
# and the page's document id and number are not sent again on every row
_SUPPORTS_ON_PAGES = """
UNWIND $ids AS pid
MATCH (pg:Page {page_id: pid})
RETURN pid, pg.doc_id, pg.number, COLLECT {
  MATCH (pg)<-[:ON_PAGE]-(p:Provenance)<-[:HAS_PROVENANCE]-(s:Support)
  WITH s, p ORDER BY s.seq
  RETURN [s.support_id, s.kind, s.text, s.role, p.provenance_id, p.section_path, p.bbox,
          p.css_path, p.table_index, p.row, p.col, p.cell_ids, p.char_start, p.char_end]
} AS rows
"""
_UNITS_ON_PAGES = """
UNWIND $ids AS pid
WITH pid, split(pid, ':') AS key
WITH pid, key[0] AS doc_id, toInteger(key[1]) AS number
RETURN pid, doc_id, number, COLLECT {
  MATCH (u:Unit {doc_id: doc_id, page: number})
  WITH u ORDER BY u.seq
  RETURN [u.unit_id, u.kind, u.text, u.completed_text, u.support_id, u.context, u.table_index,
          u.row_index, u.headers, u.cells]
} AS rows
"""
# graph expansion from the question's entities, the three kinds in one read:
# one record per entity, each kind a list of at most $limit pages. mention:
# pages in (document, page number) order; alias: the best SAME_AS link per
# page (highest score, then smallest entity id), pages by that score then
# (document, page number); assertion: the smallest (assertion id, support id)
# per page, pages in (document, page number) order.
_EXPANSION_PAGES = """
UNWIND range(0, size($ids) - 1) AS i
MATCH (e:Entity {entity_id: $ids[i]})
RETURN i, COLLECT {
  MATCH (e)-[:MENTIONED_IN]->(s:Support)-[:HAS_PROVENANCE]->(:Provenance)-[:ON_PAGE]->(pg:Page)
  WITH pg, min(s.support_id) AS sid
  ORDER BY pg.doc_id, pg.number LIMIT $limit
  RETURN [pg.page_id, sid]
} AS mention, COLLECT {
  MATCH (e)-[l:SAME_AS]-(o:Entity)-[:MENTIONED_IN]->(s:Support)-[:HAS_PROVENANCE]->(:Provenance)
        -[:ON_PAGE]->(pg:Page)
  WHERE o <> e
  WITH pg, o.entity_id AS other, l.score AS score, l.method AS method, min(s.support_id) AS sid
  ORDER BY score DESC, other, method
  WITH pg, head(collect([other, score, method, sid])) AS best
  ORDER BY best[1] DESC, pg.doc_id, pg.number LIMIT $limit
  RETURN [pg.page_id] + best
} AS alias, COLLECT {
  MATCH (e)-[:SUBJECT_OF|OBJECT]-(a:Assertion)-[:SUPPORTED_BY]->(s:Support)-[:HAS_PROVENANCE]->
        (:Provenance)-[:ON_PAGE]->(pg:Page)
  WITH pg, a, s ORDER BY a.assertion_id, s.support_id
  WITH pg, head(collect([a.assertion_id, a.predicate, s.support_id])) AS best
  ORDER BY pg.doc_id, pg.number LIMIT $limit
  RETURN [pg.page_id] + best
} AS assertion
"""

# a document's own layers, then (for a delete) its Document node
_DELETE_LAYERS = [
    "MATCH (n:Unit {doc_id: $doc_id}) DETACH DELETE n",
    "MATCH (n:Support {doc_id: $doc_id}) DETACH DELETE n",
    "MATCH (n:Provenance {doc_id: $doc_id}) DETACH DELETE n",
    "MATCH (n:TableGrid {doc_id: $doc_id}) DETACH DELETE n",
    "MATCH (n:Assertion {doc_id: $doc_id}) DETACH DELETE n",
    "MATCH (n:Page {doc_id: $doc_id}) DETACH DELETE n",
]
_DELETE_DOCUMENT_NODE = "MATCH (n:Document {doc_id: $doc_id}) DETACH DELETE n RETURN count(n) AS deleted"
_SET_STATUS = "MATCH (d:Document {doc_id: $doc_id}) SET d.status = $status RETURN count(d) AS n"
# entities no remaining document uses (SAME_AS edges alone do not keep them)
_DELETE_ORPHAN_ENTITIES = """
MATCH (e:Entity)
WHERE NOT (e)-[:MENTIONED_IN|SUBJECT_OF]->() AND NOT ()-[:OBJECT]->(e)
DETACH DELETE e
"""

NODE_LABELS = {"documents": "Document", "pages": "Page", "supports": "Support",
               "provenance": "Provenance", "units": "Unit", "tables": "TableGrid",
               "assertions": "Assertion", "entities": "Entity"}
EDGE_TYPES = ("IN_DOCUMENT", "NEXT", "HAS_PROVENANCE", "ON_PAGE", "DERIVED_FROM",
              "SUPPORTED_BY", "SUBJECT_OF", "OBJECT", "MENTIONED_IN", "SAME_AS")


def _batches(rows: list, size: int = BATCH) -> Iterator[list]:
    for i in range(0, len(rows), size):
        yield rows[i:i + size]


def _prov_row(p: Provenance) -> dict[str, Any]:
    row = to_jsonable(p)
    row["section_path"] = list(p.section_path)
    row["bbox"] = list(p.bbox) if p.bbox else None
    return {k: v for k, v in row.items() if v is not None}


class Neo4jGraphStore:
    """GraphStore on a Neo4j 5 server (see :class:`pilar.graph.GraphStore`).

    ``uri`` is a bolt/neo4j URI; ``auth`` a ``(user, password)`` pair or None.
    Applies pending migrations on open. Raises :class:`StoreError` if the
    server cannot be reached.
    """

    name = "neo4j"

    def __init__(self, uri: str, auth: tuple[str, str] | None = None, database: str | None = None):
        import neo4j

        self._neo4j = neo4j
        self.uri = uri
        self.database = database
        try:
            self.driver = neo4j.GraphDatabase.driver(uri, auth=auth, notifications_min_severity="OFF")
            self.driver.verify_connectivity()
        except Exception as exc:  # noqa: BLE001 - any connection failure
            raise StoreError(f"cannot reach Neo4j at {uri}: {exc}") from exc
        self.migrate()

    # -- schema ------------------------------------------------------------------
    def migrate(self) -> list[int]:
        """Apply ``migrations/neo4j/NNNN_*.cypher`` not yet recorded as
        ``(:SchemaMigration {version})``; returns the versions applied. Idempotent."""
        done = {r["v"] for r in self._read("MATCH (m:SchemaMigration) RETURN m.version AS v")}
        applied = []
        for version, path in migration_files("neo4j", ".cypher"):
            if version in done:
                continue
            text = "\n".join(line for line in path.read_text(encoding="utf-8").splitlines()
                             if not line.strip().startswith("//"))
            for statement in (s.strip() for s in text.split(";")):
                if statement:
                    self.driver.execute_query(statement, database_=self.database)
            self.driver.execute_query(
                "MERGE (m:SchemaMigration {version: $v}) SET m.name = $name, m.applied_at = $at",
                v=version, name=path.name, at=datetime.now(timezone.utc).isoformat(),
                database_=self.database)
            applied.append(version)
        return applied

    def server_version(self) -> str:
        rec = self._read("CALL dbms.components() YIELD name, versions, edition "
                         "RETURN name, versions[0] AS version, edition")[0]
        return f"{rec['name']} {rec['version']} {rec['edition']}"

    # -- plumbing ----------------------------------------------------------------
    def _read(self, query: str, **params) -> list[dict[str, Any]]:
        """Records of one read query (one round trip) as dicts."""
        return self._query(query, params, lambda result: result.data())

    def _values(self, query: str, **params) -> list[list[Any]]:
        """Records of one read query (one round trip) as lists of values, in
        RETURN order: cheaper to decode than :meth:`_read` for many rows."""
        return self._query(query, params, lambda result: result.values())

    def _query(self, query: str, params: dict[str, Any], transform) -> Any:
        try:
            return self.driver.execute_query(
                query, params, database_=self.database, routing_=self._neo4j.RoutingControl.READ,
                result_transformer_=transform)
        except self._neo4j.exceptions.Neo4jError as exc:
            raise StoreError(f"Neo4j read failed: {exc.message or exc}") from exc

    def _write(self, work) -> Any:
        try:
            with self.driver.session(database=self.database) as session:
                return session.execute_write(work)
        except (self._neo4j.exceptions.Neo4jError, self._neo4j.exceptions.DriverError) as exc:
            raise StoreError(f"Neo4j write failed: {getattr(exc, 'message', None) or exc}") from exc

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Writes are atomic per call (one managed transaction each); this
        context exists for protocol symmetry with the embedded store."""
        yield

    def close(self) -> None:
        self.driver.close()

    # -- reads ---------------------------------------------------------------
    def find_by_sha256(self, sha256: str) -> Document | None:
        rows = self._read(f"MATCH (d:Document {{sha256: $sha}}) RETURN {_DOC_FIELDS}", sha=sha256)
        return self._doc(rows[0]) if rows else None

    def find_by_uri(self, uri: str) -> list[Document]:
        return [self._doc(r) for r in self._read(
            f"MATCH (d:Document {{uri: $uri}}) RETURN {_DOC_FIELDS}", uri=uri)]

    def documents(self, doc_ids: list[str] | None = None, *,
                  collections: list[str] | None = None,
                  statuses: tuple[str, ...] | None = ("ready",)) -> list[Document]:
        """Stored documents, oldest first (then by uri): all of them, or those
        of ``doc_ids`` that exist (unknown ids are skipped), limited to
        ``collections`` and ``statuses`` when given. One query. Raises
        :class:`StoreError` if the read fails."""
        if doc_ids is not None and not doc_ids:
            return []
        return [self._doc(r) for r in self._read(
            _DOCUMENTS, ids=None if doc_ids is None else list(doc_ids),
            collections=None if collections is None else list(collections),
            statuses=None if statuses is None else list(statuses))]

    def pages(self, page_ids: list[str]) -> dict[str, Page]:
        rows = self._read("MATCH (p:Page) WHERE p.page_id IN $ids "
                          "RETURN p.doc_id AS d, p.number AS n, p.text AS t, p.width AS w, "
                          "p.height AS h", ids=page_ids)
        pages = [Page(r["d"], r["n"], r["t"], r["w"], r["h"]) for r in rows]
        return {p.page_id: p for p in pages}

    def supports_on_pages(self, page_ids: list[str]) -> dict[str, list[Support]]:
        """``{page_id: [Support, ...]}`` in document order, with provenance, for
        every id given (``[]`` for unknown pages). One query for all pages.
        Raises :class:`StoreError` if the read fails."""
        out: dict[str, list[Support]] = {pid: [] for pid in page_ids}
        if not out:
            return out
        for pid, doc_id, number, rows in self._values(_SUPPORTS_ON_PAGES, ids=list(out)):
            out[pid] = [Support(
                support_id=r[0], doc_id=doc_id, kind=r[1], text=r[2], role=r[3],
                provenance=Provenance(
                    provenance_id=r[4], doc_id=doc_id, page=number, section_path=tuple(r[5] or ()),
                    bbox=tuple(r[6]) if r[6] else None, css_path=r[7], table_index=r[8],
                    row=r[9], col=r[10], cell_ids=tuple(r[11] or ()), char_start=r[12],
                    char_end=r[13])) for r in rows]
        return out

    def units_on_pages(self, page_ids: list[str]) -> dict[str, list[Unit]]:
        """``{page_id: [Unit, ...]}`` in document order for every id given
        (``[]`` for pages without units). One query for all pages. Raises
        :class:`StoreError` if the read fails."""
        out: dict[str, list[Unit]] = {pid: [] for pid in page_ids}
        if not out:
            return out
        for pid, doc_id, number, rows in self._values(_UNITS_ON_PAGES, ids=list(out)):
            out[pid] = [Unit(
                unit_id=r[0], doc_id=doc_id, page=number, kind=r[1], text=r[2],
                completed_text=r[3], support_id=r[4], context=tuple(r[5] or ()),
                table_index=r[6], row_index=r[7], headers=tuple(r[8] or ()),
                cells=tuple(r[9] or ())) for r in rows]
        return out

    def stats(self) -> dict[str, int]:
        """Counts of every node label and edge type (keys as on every backend)."""
        out = {}
        for key, label in NODE_LABELS.items():
            ready = " WHERE n.status = 'ready'" if label == "Document" else ""
            out[key] = self._read(f"MATCH (n:{label}){ready} RETURN count(n) AS c")[0]["c"]
        for rel in EDGE_TYPES:
            out[rel] = self._read(f"MATCH ()-[r:{rel}]->() RETURN count(r) AS c")[0]["c"]
        return out

    # -- writes --------------------------------------------------------------
    def begin_document(self, doc: Document) -> None:
        """Record ``doc`` with status ``pending`` and no layers (see
        :meth:`pilar.graph.GraphStore.begin_document`)."""
        doc.status = "pending"
        doc.ingested_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
        self._write(lambda tx: tx.run(_WRITE_DOCUMENT, doc=to_jsonable(doc)).consume())

    def set_status(self, doc_id: str, status: str) -> bool:
        return bool(self._write(
            lambda tx: tx.run(_SET_STATUS, doc_id=doc_id, status=status).single()["n"]))

    def write_document(self, parsed: ParsedDocument, replaces: list[str] = ()) -> Document:
        """Write one document with status ``ready`` in one managed
        transaction; the documents ``replaces`` lose their layers and become
        ``deleting`` in the same transaction."""
        doc = parsed.document
        doc.ingested_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
        doc.status = "ready"
        pages = [{"page_id": p.page_id, "doc_id": p.doc_id, "number": p.number,
                  "width": p.width, "height": p.height, "text": p.text} for p in parsed.pages]
        nxt = [[a.page_id, b.page_id] for a, b in zip(parsed.pages, parsed.pages[1:])]
        provs = [_prov_row(s.provenance) for s in parsed.supports]
        supports = [{"support_id": s.support_id, "doc_id": s.doc_id, "kind": s.kind,
                     "text": s.text, "role": s.role, "seq": i,
                     "provenance_id": s.provenance.provenance_id}
                    for i, s in enumerate(parsed.supports)]
        units = [{**{k: v for k, v in to_jsonable(u).items() if v is not None}, "seq": i}
                 for i, u in enumerate(parsed.units)]
        tables = [{"table_id": f"{t.doc_id}:t{t.table_index}", "doc_id": t.doc_id,
                   "table_index": t.table_index, "page": t.page,
                   "grid": json.dumps(to_jsonable(t), ensure_ascii=False)} for t in parsed.tables]

        entities = [{"entity_id": e.entity_id, "name": e.name, "type": e.type,
                     "aliases": sorted(set(e.aliases)),
                     "aliases_text": " ".join(sorted(set(e.aliases)))} for e in parsed.entities]
        mentions = list({(e.entity_id, sid) for e in parsed.entities for sid in e.mentions})
        assertions = [{"assertion_id": a.assertion_id, "doc_id": a.doc_id, "subject": a.subject,
                       "predicate": a.predicate, "object": a.object, "modality": a.modality,
                       "qualifiers": json.dumps(a.qualifiers, ensure_ascii=False),
                       "confidence": a.confidence, "grounded": a.grounded,
                       "extractor": a.extractor, "seq": i}
                      for i, a in enumerate(parsed.assertions)]
        supported_by = list(dict.fromkeys((a.assertion_id, sid, "primary")
                                          for a in parsed.assertions for sid in a.supports))
        subject_of = [(a.subject_entity, a.assertion_id) for a in parsed.assertions
                      if a.subject_entity]
        object_of = [(a.assertion_id, a.object_entity) for a in parsed.assertions
                     if a.object_entity]
        same_as = [to_jsonable(link) for link in parsed.same_as]

        def work(tx):
            for old in replaces:
                self._delete_in(tx, old, keep_node=True)
                tx.run(_SET_STATUS, doc_id=old, status="deleting").consume()
            tx.run(_WRITE_DOCUMENT, doc=to_jsonable(doc)).consume()
            for query, rows in ((_WRITE_PAGES, pages), (_WRITE_NEXT, nxt),
                                (_WRITE_PROVENANCE, provs), (_WRITE_SUPPORTS, supports),
                                (_WRITE_UNITS, units), (_WRITE_TABLES, tables),
                                (_WRITE_ENTITIES, entities), (_WRITE_MENTIONS, mentions),
                                (_WRITE_ASSERTIONS, assertions),
                                (_WRITE_SUPPORTED_BY, supported_by),
                                (_WRITE_SUBJECT_OF, subject_of), (_WRITE_OBJECT, object_of),
                                (_WRITE_SAME_AS, same_as)):
                for batch in _batches(rows):
                    tx.run(query, rows=batch).consume()

        self._write(work)
        return doc

    def entity_candidates(self, name: str, limit: int = 20) -> list[Entity]:
        """Stored entities whose name or aliases share words with ``name``
        (full-text blocking for entity linking, PILAR App. E.2)."""
        words = list(dict.fromkeys(w.lower() for w in _WORDS.findall(name)))[:16]
        if not words:
            return []
        query = " OR ".join('"' + w.replace('"', "") + '"' for w in words)
        return [Entity(r["id"], r["name"], r["type"], tuple(r["aliases"] or ()))
                for r in self._read(_ENTITY_CANDIDATES, q=query, limit=limit)]

    def get_entities(self, entity_ids: list[str]) -> dict[str, Entity]:
        rows = self._read("MATCH (e:Entity) WHERE e.entity_id IN $ids RETURN e.entity_id AS id, "
                          "e.name AS name, e.type AS type, e.aliases AS aliases", ids=entity_ids)
        return {r["id"]: Entity(r["id"], r["name"], r["type"], tuple(r["aliases"] or ()))
                for r in rows}

    # -- graph expansion (PILAR §3.4, App. E.6) ---------------------------------
    def page_sections(self, page_ids: list[str]) -> dict[str, set[tuple[str, ...]]]:
        """``{page_id: {section_path, ...}}``: the section paths a page's supports sit in."""
        out: dict[str, set[tuple[str, ...]]] = {pid: set() for pid in page_ids}
        for r in self._read(_PAGE_SECTIONS, ids=page_ids):
            out[r["pid"]].add(tuple(r["path"] or ()))
        return out

    def expansion_pages(self, entity_ids: list[str],
                        limit: int = 50) -> dict[str, dict[str, list[str]]]:
        """Pages the graph reaches from ``entity_ids``, by kind, in one query:
        ``{"mention": {page_id: path}, "alias": {...}, "assertion": {...}}``
        where a path is the list of steps from the entity to the page.

        ``mention``: Entity -MENTIONED_IN-> Support -> Page; ``alias``: Entity
        -SAME_AS- (either direction) another entity, then MENTIONED_IN;
        ``assertion``: Entity -SUBJECT_OF-> / <-OBJECT- Assertion
        -SUPPORTED_BY-> Support -> Page. At most ``limit`` pages per entity
        and kind; a page reached from several entities keeps the path of the
        first in ``entity_ids`` order. See ``_EXPANSION_PAGES`` for the order
        and the choice of the path per page. Raises :class:`StoreError` if
        the read fails."""
        out: dict[str, dict[str, list[str]]] = {"mention": {}, "alias": {}, "assertion": {}}
        ids = list(entity_ids)
        if not ids:
            return out
        for i, mention, alias, assertion in sorted(
                self._values(_EXPANSION_PAGES, ids=ids, limit=limit), key=lambda r: r[0]):
            add_expansion_rows(out, ids[i], mention, alias, assertion)
        return out

    def assertions_of(self, doc_id: str) -> list[Assertion]:
        """A document's assertions with their support ids, in insertion order."""
        rows = self._read(
            "MATCH (a:Assertion {doc_id: $id}) "
            "OPTIONAL MATCH (se:Entity)-[:SUBJECT_OF]->(a) OPTIONAL MATCH (a)-[:OBJECT]->(oe:Entity) "
            "RETURN a{.*} AS a, se.entity_id AS se, oe.entity_id AS oe, "
            "COLLECT { MATCH (a)-[:SUPPORTED_BY]->(s:Support) RETURN s.support_id "
            "ORDER BY s.seq } AS supports ORDER BY a.seq", id=doc_id)
        return [Assertion(assertion_id=r["a"]["assertion_id"], doc_id=r["a"]["doc_id"],
                          subject=r["a"]["subject"], predicate=r["a"]["predicate"],
                          object=r["a"]["object"], modality=r["a"]["modality"],
                          qualifiers=json.loads(r["a"]["qualifiers"]),
                          confidence=r["a"]["confidence"], grounded=r["a"]["grounded"],
                          extractor=r["a"]["extractor"], subject_entity=r["se"],
                          object_entity=r["oe"], supports=tuple(r["supports"])) for r in rows]

    def delete_document(self, doc_id: str) -> bool:
        return bool(self._write(lambda tx: self._delete_in(tx, doc_id)))

    @staticmethod
    def _delete_in(tx, doc_id: str, keep_node: bool = False) -> int:
        """Delete a document's layers (and its node unless ``keep_node``),
        then orphaned entities; returns the Document nodes deleted."""
        for query in _DELETE_LAYERS:
            tx.run(query, doc_id=doc_id).consume()
        deleted = 0 if keep_node else tx.run(_DELETE_DOCUMENT_NODE, doc_id=doc_id).single()["deleted"]
        tx.run(_DELETE_ORPHAN_ENTITIES).consume()
        return deleted

    def cypher(self, query: str, params: dict | None = None, *, timeout: float = 30.0,
               row_cap: int = 1000):
        """A read-only query in a READ transaction (:func:`pilar.graph.explore.run_read_query`)."""
        from pilar.graph.explore import run_read_query

        return run_read_query(self.driver, query, params, database=self.database,
                              timeout=timeout, row_cap=row_cap)

    @staticmethod
    def _doc(r: dict[str, Any]) -> Document:
        return Document(doc_id=r["d.doc_id"], uri=r["d.uri"], title=r["d.title"] or "",
                        media_type=r["d.media_type"], sha256=r["d.sha256"],
                        n_pages=r["d.n_pages"], ingested_at=r["d.ingested_at"] or "",
                        collection=r["d.collection"] or "default", status=r["d.status"] or "ready")
