"""The Cypher of the Neo4j graph backend (:mod:`pilar.graph.neo4j`), in one
place: document writes (UNWIND + MERGE batches of many documents' rows,
run in one transaction per batch of documents), the reads behind every :class:`~pilar.graph.GraphStore` method,
deletes and counts. Parameters are ``$name``; labels and relationship types
as in DESIGN.md. The schema (constraints, indexes) is in ``migrations/neo4j``.
"""

from __future__ import annotations

import dataclasses

from pilar.model import Provenance, Unit

DOC_FIELDS = ("d.doc_id, d.uri, d.title, d.media_type, d.sha256, d.n_pages, d.ingested_at, "
              "d.collection, d.status, d.sources")
ADD_SOURCE = """
MATCH (d:Document {doc_id: $doc_id}) WHERE NOT $uri IN coalesce(d.sources, [])
SET d.sources = coalesce(d.sources, []) + $uri RETURN count(d) AS added
"""
REMOVE_SOURCE = """
MATCH (d:Document {doc_id: $doc_id})
WITH d, [u IN coalesce(d.sources, []) WHERE u <> $uri] AS rest
SET d.sources = rest, d.uri = CASE WHEN d.uri = $uri AND size(rest) > 0 THEN rest[0] ELSE d.uri END
"""
_DOCUMENTS = """
MATCH (d:Document)
WHERE {match} AND ($collections IS NULL OR d.collection IN $collections)
  AND ($statuses IS NULL OR d.status IN $statuses)
RETURN {fields} ORDER BY d.ingested_at, d.uri
"""
DOCUMENTS = _DOCUMENTS.format(match="true", fields=DOC_FIELDS)
# given ids, a seek on the doc_id constraint's index (an "$ids IS NULL OR" test
# would make the planner scan every Document)
DOCUMENTS_BY_ID = _DOCUMENTS.format(match="d.doc_id IN $ids", fields=DOC_FIELDS)

# A document's own nodes are new in its transaction: its doc_id is the hash of
# its bytes, it is written whole or not at all, and a document left pending or
# deleting by a crash is removed before its file is written again. So they and
# their relationships are CREATEd (a clash with a stored id fails on the
# uniqueness constraint, never duplicates) and each statement creates a node
# with the edges it owns, found once: pages by document, supports (with their
# provenance and units) by page, assertions with their support and entity
# edges, entities (shared within a collection, also between the documents of
# one batch: MERGEd; a known one written only when it brings new aliases) with
# their mentions.
WRITE_DOCUMENTS = """
UNWIND $rows AS row
MERGE (d:Document {doc_id: row.doc_id}) SET d += row
"""
def _props(var: str, fields) -> str:
    """A Cypher map literal taking ``fields`` from the row map ``var``
    (``{a: var.a, ...}``: a literal map lets the planner CREATE without the
    Eager pass that ``SET n = var`` needs; null values are left out)."""
    return "{" + ", ".join(f"{f}: {var}.{f}" for f in fields) + "}"


PAGE_FIELDS = ("page_id", "doc_id", "number", "width", "height", "text")
SUPPORT_FIELDS = ("support_id", "doc_id", "kind", "text", "role", "seq", "provenance_id")
PROVENANCE_FIELDS = tuple(f.name for f in dataclasses.fields(Provenance))
UNIT_RECORD_FIELDS = tuple(f.name for f in dataclasses.fields(Unit) if f.name != "stats")
"""A Unit's own fields (its statistics go flattened, as below)."""
UNIT_FIELDS = (*UNIT_RECORD_FIELDS, "term_counts", "term_length", "line_tokens",
               "line_tokenizer", "seq")
"""A Unit's properties: its fields, its statistics flattened (null until known)."""
TABLE_FIELDS = ("table_id", "doc_id", "table_index", "page", "grid")
ASSERTION_FIELDS = ("assertion_id", "doc_id", "subject", "predicate", "object", "modality",
                    "qualifiers", "confidence", "grounded", "extractor", "seq")
"""The properties each node of a document's layers is created with (the
rows of :func:`pilar.graph.neo4j_rows.document_rows`)."""

WRITE_PAGES = f"""
UNWIND $rows AS row
MATCH (d:Document {{doc_id: row.doc_id}})
CREATE (p:Page {_props("row", PAGE_FIELDS)})-[:IN_DOCUMENT]->(d)
"""
WRITE_NEXT = """
UNWIND $rows AS row
MATCH (a:Page {page_id: row[0]}), (b:Page {page_id: row[1]}) CREATE (a)-[:NEXT]->(b)
"""
# one row per page: [page_id, [{prov, support, units}, ...]]
WRITE_SUPPORTS = f"""
UNWIND $rows AS row
MATCH (pg:Page {{page_id: row[0]}})
UNWIND row[1] AS sr
CREATE (s:Support {_props("sr.support", SUPPORT_FIELDS)})
       -[:HAS_PROVENANCE]->(:Provenance {_props("sr.prov", PROVENANCE_FIELDS)})-[:ON_PAGE]->(pg)
WITH s, sr
CALL (s, sr) {{
  UNWIND sr.units AS ur
  CREATE (:Unit {_props("ur", UNIT_FIELDS)})-[:DERIVED_FROM]->(s)
}}
"""
# units whose support is not among their document's supports (no edge)
WRITE_LOOSE_UNITS = f"""
UNWIND $rows AS row
CREATE (:Unit {_props("row", UNIT_FIELDS)})
"""
WRITE_TABLES = f"""
UNWIND $rows AS row
CREATE (:TableGrid {_props("row", TABLE_FIELDS)})
"""
WRITE_ENTITIES = """
UNWIND $rows AS row
MERGE (e:Entity {entity_id: row.entity_id})
ON CREATE SET e.name = row.name, e.type = row.type, e.aliases = row.aliases,
              e.aliases_text = row.aliases_text, e.collection = row.collection
WITH e, row
CALL (e, row) {
  WITH e, [a IN row.aliases WHERE NOT a IN e.aliases] AS more WHERE size(more) > 0
  WITH e, e.aliases + more AS aliases
  SET e.aliases = aliases, e.aliases_text = reduce(t = '', a IN aliases | t + ' ' + a)
}
CALL (e, row) {
  UNWIND row.mentions AS sid
  MATCH (s:Support {support_id: sid})
  CREATE (e)-[:MENTIONED_IN]->(s)
}
"""
# one row per assertion: {props, supports: [support_id, ...], subject, object}
WRITE_ASSERTIONS = f"""
UNWIND $rows AS row
CREATE (a:Assertion {_props("row.props", ASSERTION_FIELDS)})
WITH a, row
CALL (a, row) {{
  UNWIND row.supports AS sid
  MATCH (s:Support {{support_id: sid}})
  CREATE (a)-[:SUPPORTED_BY {{role: 'primary'}}]->(s)
}}
CALL (a, row) {{
  MATCH (e:Entity {{entity_id: row.subject}})
  CREATE (e)-[:SUBJECT_OF]->(a)
}}
CALL (a, row) {{
  MATCH (e:Entity {{entity_id: row.object}})
  CREATE (a)-[:OBJECT]->(e)
}}
"""
WRITE_SAME_AS = """
UNWIND $rows AS row
MATCH (a:Entity {entity_id: row.source}), (b:Entity {entity_id: row.target})
MERGE (a)-[r:SAME_AS]->(b) SET r.score = row.score, r.method = row.method
"""
# an entity's fields as pilar.graph.neo4j_rows.entity_of reads them
ENTITY_RETURN = ("RETURN e.entity_id AS id, e.name AS name, e.type AS type, "
                 "e.aliases AS aliases, e.collection AS collection")
ENTITY_CANDIDATES = """
CALL db.index.fulltext.queryNodes('entity_names', $q) YIELD node AS e, score
WHERE $collections IS NULL OR e.collection IN $collections
""" + ENTITY_RETURN + " LIMIT $limit"
# ENTITY_CANDIDATES of each full-text query of $qs (null: none), in one read:
# [i, [[id, name, type, aliases, collection], ...]] for the queries with hits
ENTITY_CANDIDATES_MANY = """
UNWIND range(0, size($qs) - 1) AS i
CALL (i) {
  WITH i WHERE $qs[i] IS NOT NULL
  CALL db.index.fulltext.queryNodes('entity_names', $qs[i]) YIELD node AS e, score
  WITH e WHERE $collections IS NULL OR e.collection IN $collections
  RETURN e LIMIT $limit
}
RETURN i, collect([e.entity_id, e.name, e.type, e.aliases, e.collection]) AS found
"""

PAGE_SECTIONS = """
UNWIND $ids AS pid MATCH (:Page {page_id: pid})<-[:ON_PAGE]-(p:Provenance)
RETURN DISTINCT pid, p.section_path AS path
"""
# one record per page, its supports (units) as lists in document order: the
# driver decodes nested lists far faster than one row of maps per support,
# and the page's document id and number are not sent again on every row
SUPPORTS_ON_PAGES = """
UNWIND $ids AS pid
MATCH (pg:Page {page_id: pid})
RETURN pid, pg.doc_id, pg.number, COLLECT {
  MATCH (pg)<-[:ON_PAGE]-(p:Provenance)<-[:HAS_PROVENANCE]-(s:Support)
  WITH s, p ORDER BY s.seq
  RETURN [s.support_id, s.kind, s.text, s.role, p.provenance_id, p.section_path, p.bbox,
          p.css_path, p.table_index, p.row, p.col, p.cell_ids, p.char_start, p.char_end]
} AS rows
"""
_PAGE_UNITS = """
  MATCH (u:Unit {doc_id: doc_id, page: number})
  WITH u ORDER BY u.seq
  RETURN [u.unit_id, u.kind, u.text, u.completed_text, u.support_id, u.context, u.table_index,
          u.row_index, u.headers, u.cells, u.term_counts, u.term_length, u.line_tokens,
          u.line_tokenizer]
"""  # a page's units in order, as rows (inside COLLECT {...} with doc_id and number bound)
UNITS_ON_PAGES = """
UNWIND $ids AS pid
WITH pid, split(pid, ':') AS key
WITH pid, key[0] AS doc_id, toInteger(key[1]) AS number
RETURN pid, doc_id, number, COLLECT {""" + _PAGE_UNITS + """} AS rows
"""
# SUPPORTS_ON_PAGES and UNITS_ON_PAGES in one read: per page id, its supports'
# rows and its units' rows (each as those queries return them)
PAGE_MATERIAL = """
UNWIND $ids AS pid
WITH pid, split(pid, ':') AS key
WITH pid, key[0] AS doc_id, toInteger(key[1]) AS number
OPTIONAL MATCH (pg:Page {page_id: pid})
RETURN pid, doc_id, number, COLLECT {
  MATCH (pg)<-[:ON_PAGE]-(p:Provenance)<-[:HAS_PROVENANCE]-(s:Support)
  WITH s, p ORDER BY s.seq
  RETURN [s.support_id, s.kind, s.text, s.role, p.provenance_id, p.section_path, p.bbox,
          p.css_path, p.table_index, p.row, p.col, p.cell_ids, p.char_start, p.char_end]
} AS supports, COLLECT {""" + _PAGE_UNITS + """} AS units
"""
SET_UNIT_STATS = """
UNWIND $rows AS row
MATCH (u:Unit {unit_id: row.unit_id})
SET u.term_counts = row.term_counts, u.term_length = row.term_length,
    u.line_tokens = row.line_tokens, u.line_tokenizer = row.line_tokenizer
"""
# graph expansion from the question's entities, the three kinds in one read:
# one record per entity, each kind a list of at most $limit pages. mention:
# pages in (document, page number) order; alias: the best SAME_AS link per
# page (highest score, then smallest entity id), pages by that score then
# (document, page number); assertion: the smallest (assertion id, support id)
# per page, pages in (document, page number) order.
EXPANSION_PAGES = """
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

# an assertion with its subject/object entity ids and support ids (in order)
ASSERTION_RETURN = """
OPTIONAL MATCH (se:Entity)-[:SUBJECT_OF]->(a) OPTIONAL MATCH (a)-[:OBJECT]->(oe:Entity)
RETURN a{.*} AS a, se.entity_id AS se, oe.entity_id AS oe,
       COLLECT { MATCH (a)-[:SUPPORTED_BY]->(s:Support) RETURN s.support_id ORDER BY s.seq } AS supports
"""
ASSERTIONS_OF_DOC = "MATCH (a:Assertion {doc_id: $id})" + ASSERTION_RETURN + " ORDER BY a.seq"
ENTITY_ASSERTIONS = """
UNWIND $ids AS eid
CALL (eid) {
  MATCH (:Entity {entity_id: eid})-[:SUBJECT_OF|OBJECT]-(a:Assertion)
  WITH DISTINCT a ORDER BY a.assertion_id LIMIT $limit
  RETURN a
}
WITH DISTINCT a
""" + ASSERTION_RETURN + " ORDER BY a.assertion_id"
ENTITY_MENTIONS = """
UNWIND $ids AS eid
CALL (eid) {
  MATCH (:Entity {entity_id: eid})-[:MENTIONED_IN]->(s:Support)
  WITH s.support_id AS sid ORDER BY sid LIMIT $limit
  RETURN sid
}
RETURN eid, sid ORDER BY eid, sid
"""
ENTITY_SAME_AS = """
CALL () {
  MATCH (a:Entity)-[l:SAME_AS]->(b:Entity) WHERE a.entity_id IN $ids
  RETURN a.entity_id AS source, b.entity_id AS target, l.score AS score, l.method AS method
  UNION
  MATCH (a:Entity)-[l:SAME_AS]->(b:Entity) WHERE b.entity_id IN $ids
  RETURN a.entity_id AS source, b.entity_id AS target, l.score AS score, l.method AS method
}
RETURN source, target, score, method ORDER BY source, target
"""
ALL_SAME_AS = """
MATCH (a:Entity)-[l:SAME_AS]->(b:Entity)
RETURN a.entity_id AS source, b.entity_id AS target, l.score AS score, l.method AS method
ORDER BY source, target
"""
# bridge expansion (Neo4jGraphStore.bridges): the entities mentioned on the
# supports $sids, each with the supports naming it, its documents (counted up
# to $max + 1) and, for those in at most $max documents, the pages mentioning
# it or an entity SAME_AS it ($limit per entity, by document and page)
BRIDGES = """
MATCH (s:Support)<-[:MENTIONED_IN]-(e:Entity) WHERE s.support_id IN $sids
WITH e, collect(DISTINCT s.support_id) AS here
WITH e, here, size(COLLECT {
  MATCH (e)-[:MENTIONED_IN]->(m:Support) RETURN DISTINCT m.doc_id LIMIT $max + 1
}) AS documents
CALL (e, documents) {
  WITH e WHERE documents <= $max
  MATCH (e)-[:SAME_AS*0..1]-(o:Entity)-[:MENTIONED_IN]->(m:Support)-[:HAS_PROVENANCE]->
        (:Provenance)-[:ON_PAGE]->(pg:Page)
  WITH pg, o, min(m.support_id) AS sid
  ORDER BY pg.doc_id, pg.number, o.entity_id
  WITH pg, head(collect([sid, o.entity_id])) AS best
  ORDER BY pg.doc_id, pg.number LIMIT $limit
  RETURN collect([pg.page_id] + best) AS pages
}
RETURN e.entity_id, e.name, here, documents, pages
"""
# the supports of s's text (s among them) mentioning an entity of s that at most $max
# documents mention (a hub's mentions are not walked)
TEMPLATE_SUPPORTS = """
MATCH (s:Support)<-[:MENTIONED_IN]-(e:Entity) WHERE s.support_id IN $sids
  AND size(COLLECT { MATCH (e)-[:MENTIONED_IN]->(m:Support) RETURN DISTINCT m.doc_id
                     LIMIT $max + 1 }) <= $max
WITH s, collect(e) AS ents
WHERE size(COLLECT { UNWIND ents AS e MATCH (e)-[:MENTIONED_IN]->(t:Support)
                     WHERE t.text = s.text RETURN DISTINCT t.doc_id LIMIT $documents }) >= $documents
RETURN s.support_id
"""
MENTION_PAGES = """
UNWIND $ids AS eid
MATCH (e:Entity {entity_id: eid})
RETURN eid, size(COLLECT {
  MATCH (e)-[:MENTIONED_IN]->(:Support)-[:HAS_PROVENANCE]->(:Provenance)-[:ON_PAGE]->(pg:Page)
  RETURN DISTINCT pg.page_id
}) AS pages
"""
ENTITY_DOCUMENTS = """
UNWIND $ids AS eid
MATCH (e:Entity {entity_id: eid})
RETURN eid, COLLECT { MATCH (e)-[:MENTIONED_IN]->(s:Support) RETURN DISTINCT s.doc_id } AS mentioned,
       COLLECT { MATCH (e)-[:SUBJECT_OF|OBJECT]-(a:Assertion) RETURN DISTINCT a.doc_id } AS asserted
"""
SUPPORTS_BY_ID = """
MATCH (s:Support)-[:HAS_PROVENANCE]->(p:Provenance) WHERE s.support_id IN $ids
RETURN s.support_id, s.doc_id, p.page, s.kind, s.text, s.role, p.provenance_id, p.section_path,
       p.bbox, p.css_path, p.table_index, p.row, p.col, p.cell_ids, p.char_start, p.char_end
"""

# a document's own layers, then (for a delete) its Document node
DELETE_LAYERS = [
    "MATCH (n:Unit {doc_id: $doc_id}) DETACH DELETE n",
    "MATCH (n:Support {doc_id: $doc_id}) DETACH DELETE n",
    "MATCH (n:Provenance {doc_id: $doc_id}) DETACH DELETE n",
    "MATCH (n:TableGrid {doc_id: $doc_id}) DETACH DELETE n",
    "MATCH (n:Assertion {doc_id: $doc_id}) DETACH DELETE n",
    "MATCH (n:Page {doc_id: $doc_id}) DETACH DELETE n",
]
DELETE_DOCUMENT_NODE = "MATCH (n:Document {doc_id: $doc_id}) DETACH DELETE n RETURN count(n) AS deleted"
SET_STATUS = "MATCH (d:Document {doc_id: $doc_id}) SET d.status = $status RETURN count(d) AS n"
# entities no remaining document uses (SAME_AS edges alone do not keep them)
DELETE_ORPHAN_ENTITIES = """
MATCH (e:Entity)
WHERE NOT (e)-[:MENTIONED_IN|SUBJECT_OF]->() AND NOT ()-[:OBJECT]->(e)
DETACH DELETE e
"""

NODE_LABELS = {"documents": "Document", "pages": "Page", "supports": "Support",
               "provenance": "Provenance", "units": "Unit", "tables": "TableGrid",
               "assertions": "Assertion", "entities": "Entity"}
EDGE_TYPES = ("IN_DOCUMENT", "NEXT", "HAS_PROVENANCE", "ON_PAGE", "DERIVED_FROM",
              "SUPPORTED_BY", "SUBJECT_OF", "OBJECT", "MENTIONED_IN", "SAME_AS")


# -- schema and plumbing ------------------------------------------------------------
MIGRATIONS_DONE = "MATCH (m:SchemaMigration) RETURN m.version AS v"
# the graph's change stamp (migration 7): set anew by every write transaction, last
STAMP_CHANGE = "MERGE (s:ChangeStamp {id: 'graph'}) SET s.version = randomUUID()"
CHANGE_STAMP = "OPTIONAL MATCH (s:ChangeStamp {id: 'graph'}) RETURN s.version"
RECORD_MIGRATION = "MERGE (m:SchemaMigration {version: $v}) SET m.name = $name, m.applied_at = $at"
SERVER_VERSION = ("CALL dbms.components() YIELD name, versions, edition "
                  "RETURN name, versions[0] AS version, edition")

# -- small reads ---------------------------------------------------------------------
FIND_BY_SHA256 = f"MATCH (d:Document {{sha256: $sha, collection: $collection}}) RETURN {DOC_FIELDS}"
FIND_BY_URI = (f"MATCH (d:Document) WHERE $uri IN d.sources "
               f"AND ($collection IS NULL OR d.collection = $collection) RETURN {DOC_FIELDS}")
PAGES = ("MATCH (p:Page) WHERE p.page_id IN $ids "
         "RETURN p.doc_id AS d, p.number AS n, p.text AS t, p.width AS w, p.height AS h")
GET_ENTITIES = "MATCH (e:Entity) WHERE e.entity_id IN $ids " + ENTITY_RETURN


def count_nodes(label: str) -> str:
    """Nodes of ``label`` (a value of :data:`NODE_LABELS`); Documents only when ``ready``."""
    ready = " WHERE n.status = 'ready'" if label == "Document" else ""
    return f"MATCH (n:{label}){ready} RETURN count(n) AS c"


def count_edges(rel: str) -> str:
    """Relationships of type ``rel`` (one of :data:`EDGE_TYPES`)."""
    return f"MATCH ()-[r:{rel}]->() RETURN count(r) AS c"
