"""The SQL of the SQLite graph backend (:mod:`pilar.graph.sqlite`), in one
place, as :mod:`pilar.graph.neo4j_cypher` is for Neo4j: the document columns,
layer tables and counts, and the reads behind the
:class:`~pilar.graph.GraphStore` methods (wanted pages, graph expansion,
assertions, mentions, ``SAME_AS`` links, documents and supports of entities).
Parameters are ``?`` or ``?N``; a list parameter is a JSON array read with
``json_each``. The schema is in ``migrations/sqlite``.
"""

from __future__ import annotations

DOC_COLUMNS = ("doc_id, uri, title, media_type, sha256, n_pages, ingested_at, collection, "
                "status")
# a document's columns as read, its sources (a JSON array, first recorded first) last
DOC_READ = ", ".join(f"d.{c}" for c in DOC_COLUMNS.split(", ")) + """,
    (SELECT json_group_array(uri) FROM (SELECT s.uri FROM document_sources s
     WHERE s.doc_id = d.doc_id ORDER BY s.rowid))"""
FIND_BY_SHA256 = f"SELECT {DOC_READ} FROM documents d WHERE sha256 = ? AND collection = ?"
# ?2 NULL: any collection
FIND_BY_URI = f"""
SELECT {DOC_READ} FROM documents d
WHERE doc_id IN (SELECT doc_id FROM document_sources WHERE uri = ?1)
  AND (?2 IS NULL OR collection = ?2)
"""
ENTITY_COLS = "e.entity_id, e.name, e.type, e.aliases, e.collection"
# ?1 an FTS5 query, ?2 a JSON array of collections (NULL: any), ?3 the limit
ENTITY_CANDIDATES = f"""
SELECT {ENTITY_COLS} FROM entity_fts f JOIN entities e ON e.rowid = f.rowid
WHERE entity_fts MATCH ?1 AND (?2 IS NULL OR e.collection IN (SELECT value FROM json_each(?2)))
ORDER BY bm25(entity_fts) LIMIT ?3
"""
UPSERT_DOCUMENT = f"""
INSERT INTO documents ({DOC_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?)
ON CONFLICT(doc_id) DO UPDATE SET uri = excluded.uri, title = excluded.title,
  media_type = excluded.media_type, sha256 = excluded.sha256, n_pages = excluded.n_pages,
  ingested_at = excluded.ingested_at, collection = excluded.collection, status = excluded.status
"""
# the tables holding a document's own layers (its Document row aside)
LAYER_TABLES = ("assertions", "units", "table_grids", "supports", "provenance", "pages")


STAT_KEYS = ("documents", "pages", "supports", "provenance", "units", "tables", "assertions",
              "entities", "IN_DOCUMENT", "NEXT", "HAS_PROVENANCE", "ON_PAGE", "DERIVED_FROM",
              "SUPPORTED_BY", "SUBJECT_OF", "OBJECT", "MENTIONED_IN", "SAME_AS")
STATS_SQL = """
SELECT (SELECT count(*) FROM documents WHERE status = 'ready'), (SELECT count(*) FROM pages),
       (SELECT count(*) FROM supports), (SELECT count(*) FROM provenance),
       (SELECT count(*) FROM units), (SELECT count(*) FROM table_grids),
       (SELECT count(*) FROM assertions), (SELECT count(*) FROM entities),
       (SELECT count(*) FROM pages),
       (SELECT count(*) FROM pages p JOIN pages q ON q.doc_id = p.doc_id AND q.number = p.number + 1),
       (SELECT count(*) FROM supports),
       (SELECT count(*) FROM provenance p JOIN pages g ON g.doc_id = p.doc_id AND g.number = p.page),
       (SELECT count(*) FROM units),
       (SELECT count(*) FROM assertion_supports),
       (SELECT count(*) FROM assertions WHERE subject_entity IS NOT NULL),
       (SELECT count(*) FROM assertions WHERE object_entity IS NOT NULL),
       (SELECT count(*) FROM mentions),
       (SELECT count(*) FROM same_as)
"""
# entities that no remaining document mentions or uses in an assertion
DELETE_ORPHAN_ENTITIES = """
DELETE FROM entities WHERE NOT EXISTS (SELECT 1 FROM mentions m WHERE m.entity_id = entities.entity_id)
  AND NOT EXISTS (SELECT 1 FROM assertions a WHERE a.subject_entity = entities.entity_id
                  OR a.object_entity = entities.entity_id)
"""
# the pages asked for, in order: json_each over a JSON array of page ids
WANTED_PAGES = """
WITH wanted(pid, doc_id, page) AS (
    SELECT j.value, g.doc_id, g.number FROM json_each(?1) j JOIN pages g ON g.page_id = j.value)
"""
SUPPORTS_ON_PAGES = WANTED_PAGES + """
SELECT w.pid, w.page, w.doc_id, s.support_id, s.kind, s.text, p.provenance_id, p.section_path,
       p.bbox, p.css_path, p.table_index, p.row, p.col, p.cell_ids, p.char_start, p.char_end,
       s.role
FROM wanted w JOIN provenance p ON p.doc_id = w.doc_id AND p.page = w.page
JOIN supports s ON s.provenance_id = p.provenance_id
ORDER BY w.pid, s.rowid
"""
UNITS_ON_PAGES = WANTED_PAGES + """
SELECT w.pid, u.unit_id, u.doc_id, u.page, u.kind, u.text, u.completed_text, u.support_id,
       u.context, u.table_index, u.row_index, u.headers, u.cells, u.term_counts,
       u.term_length, u.line_tokens, u.line_tokenizer
FROM wanted w JOIN units u ON u.doc_id = w.doc_id AND u.page = w.page
ORDER BY w.pid, u.rowid
"""
# supports (kind 0) and units (kind 1) of the pages asked for in one statement,
# each in the column order of SUPPORTS_ON_PAGES / UNITS_ON_PAGES after the kind
# (the shorter padded with NULLs); rows by page, then kind, then document order
PAGE_MATERIAL = WANTED_PAGES + """
SELECT 0, w.pid, w.page, w.doc_id, s.support_id, s.kind, s.text, p.provenance_id,
       p.section_path, p.bbox, p.css_path, p.table_index, p.row, p.col, p.cell_ids,
       p.char_start, p.char_end, s.role, s.rowid
FROM wanted w JOIN provenance p ON p.doc_id = w.doc_id AND p.page = w.page
JOIN supports s ON s.provenance_id = p.provenance_id
UNION ALL
SELECT 1, w.pid, u.unit_id, u.doc_id, u.page, u.kind, u.text, u.completed_text, u.support_id,
       u.context, u.table_index, u.row_index, u.headers, u.cells, u.term_counts,
       u.term_length, u.line_tokens, u.line_tokenizer, u.rowid
FROM wanted w JOIN units u ON u.doc_id = w.doc_id AND u.page = w.page
ORDER BY 2, 1, 19
"""
SET_UNIT_STATS = """
UPDATE units SET term_counts = ?2, term_length = ?3, line_tokens = ?4, line_tokenizer = ?5
WHERE unit_id = ?1
"""
PAGE_SECTIONS = WANTED_PAGES + """
SELECT DISTINCT w.pid, p.section_path
FROM wanted w JOIN provenance p ON p.doc_id = w.doc_id AND p.page = w.page
"""
# graph expansion (see SqliteGraphStore.expansion_pages), the three kinds in
# one statement; ?1 is a JSON array of entity ids (i = position), ?2 the
# per-entity, per-kind page limit. Columns: kind, i, page_id, support_id,
# other entity, score, method (alias), assertion id, predicate (assertion);
# rows ordered by kind, i, then rank.
EXPANSION_PAGES = """
WITH wanted(i, eid) AS (SELECT key, value FROM json_each(?1)),
mention_hits AS (
    SELECT w.i, p.doc_id, p.page, min(s.support_id) AS sid
    FROM wanted w JOIN mentions m ON m.entity_id = w.eid
    JOIN supports s ON s.support_id = m.support_id
    JOIN provenance p ON p.provenance_id = s.provenance_id
    GROUP BY w.i, p.doc_id, p.page),
mention_ranked AS (
    SELECT *, row_number() OVER (PARTITION BY i ORDER BY doc_id, page) AS r FROM mention_hits),
linked(i, other, score, method) AS (
    SELECT w.i, x.target, x.score, x.method FROM wanted w JOIN same_as x ON x.source = w.eid
    WHERE x.target <> w.eid
    UNION SELECT w.i, x.source, x.score, x.method FROM wanted w JOIN same_as x ON x.target = w.eid
    WHERE x.source <> w.eid),
alias_hits AS (
    SELECT l.i, l.other, l.score, l.method, p.doc_id, p.page, min(s.support_id) AS sid
    FROM linked l JOIN mentions m ON m.entity_id = l.other
    JOIN supports s ON s.support_id = m.support_id
    JOIN provenance p ON p.provenance_id = s.provenance_id
    GROUP BY l.i, l.other, l.score, l.method, p.doc_id, p.page),
alias_best AS (
    SELECT *, row_number() OVER (PARTITION BY i, doc_id, page
                                 ORDER BY score DESC, other, method) AS b FROM alias_hits),
alias_ranked AS (
    SELECT *, row_number() OVER (PARTITION BY i ORDER BY score DESC, doc_id, page) AS r
    FROM alias_best WHERE b = 1),
assertion_hits AS (
    SELECT w.i, a.assertion_id AS aid, a.predicate AS pred, s.support_id AS sid, p.doc_id, p.page
    FROM wanted w JOIN assertions a ON a.subject_entity = w.eid OR a.object_entity = w.eid
    JOIN assertion_supports x ON x.assertion_id = a.assertion_id
    JOIN supports s ON s.support_id = x.support_id
    JOIN provenance p ON p.provenance_id = s.provenance_id),
assertion_best AS (
    SELECT *, row_number() OVER (PARTITION BY i, doc_id, page ORDER BY aid, sid) AS b
    FROM assertion_hits),
assertion_ranked AS (
    SELECT *, row_number() OVER (PARTITION BY i ORDER BY doc_id, page) AS r
    FROM assertion_best WHERE b = 1)
SELECT 'mention' AS kind, i, doc_id || ':' || page, sid, NULL, NULL, NULL, NULL, NULL, r
FROM mention_ranked WHERE r <= ?2
UNION ALL
SELECT 'alias', i, doc_id || ':' || page, sid, other, score, method, NULL, NULL, r
FROM alias_ranked WHERE r <= ?2
UNION ALL
SELECT 'assertion', i, doc_id || ':' || page, sid, NULL, NULL, NULL, aid, pred, r
FROM assertion_ranked WHERE r <= ?2
ORDER BY 1, 2, 10
"""
# bridge expansion (see SqliteGraphStore.bridges), in two reads. SUPPORT_MENTIONS: ?1 a
# JSON array of support ids; rows (support, entity) for each mention on them.
SUPPORT_MENTIONS = """
WITH src(sid) AS (SELECT DISTINCT value FROM json_each(?1))
SELECT m.support_id, m.entity_id FROM src JOIN mentions m ON m.support_id = src.sid
"""
# ENTITY_REACH: ?1 a JSON array of entity ids, ?2 the most documents a bridge may be
# mentioned in. Rows: ('docs', entity, name, documents) with documents counted up to
# ?2 + 1; ('page', entity, support, document, page, entity reached) for entities of at
# most ?2 documents, every page (the caller keeps the first by document and page). A
# mention's document and page are its own columns (migration 12), read from the index
# mentions_entity_place.
ENTITY_REACH = """
WITH ents(eid) AS (SELECT DISTINCT value FROM json_each(?1)),
docs AS (SELECT e.eid, (SELECT count(*) FROM (
            SELECT DISTINCT m.doc_id FROM mentions m WHERE m.entity_id = e.eid LIMIT ?2 + 1)) AS n
         FROM ents e),
linked(eid, other) AS (
    SELECT eid, eid FROM docs WHERE n <= ?2
    UNION SELECT d.eid, x.target FROM docs d JOIN same_as x ON x.source = d.eid WHERE d.n <= ?2
    UNION SELECT d.eid, x.source FROM docs d JOIN same_as x ON x.target = d.eid WHERE d.n <= ?2),
hits AS (SELECT l.eid, l.other, m.doc_id, m.page, min(m.support_id) AS sid
         FROM linked l JOIN mentions m ON m.entity_id = l.other
         GROUP BY l.eid, m.doc_id, m.page)
SELECT 'docs', d.eid, e.name, d.n, NULL, NULL FROM docs d
    JOIN entities e ON e.entity_id = d.eid
UNION ALL SELECT 'page', eid, sid, doc_id, page, other FROM hits
"""
# ?1 a JSON array of support ids, ?2 the documents that make a text template text: the
# supports of the same text (by its index) that mention an entity the given one mentions,
# of the entities mentioned in at most ?3 documents (a hub's mentions are not walked)
TEMPLATE_SUPPORTS = """
WITH src(sid) AS (SELECT DISTINCT value FROM json_each(?1))
SELECT s.support_id FROM src JOIN supports s ON s.support_id = src.sid
WHERE (SELECT count(*) FROM (
        SELECT DISTINCT t.doc_id FROM supports t
        WHERE t.text = s.text AND EXISTS (
            SELECT 1 FROM mentions m JOIN mentions o
            ON o.entity_id = m.entity_id AND o.support_id = t.support_id
            WHERE m.support_id = s.support_id AND (SELECT count(*) FROM (
                SELECT DISTINCT x.doc_id FROM mentions x WHERE x.entity_id = m.entity_id
                LIMIT ?3 + 1)) <= ?3)
        LIMIT ?2)) >= ?2
"""
ASSERTION_COLS = """a.assertion_id, a.doc_id, a.subject, a.predicate, a.object, a.modality,
a.qualifiers, a.confidence, a.grounded, a.extractor, a.subject_entity, a.object_entity,
(SELECT json_group_array(support_id) FROM assertion_supports s WHERE s.assertion_id = a.assertion_id)"""
ASSERTIONS_OF_DOC = f"SELECT {ASSERTION_COLS} FROM assertions a WHERE a.doc_id = ? ORDER BY a.rowid"
# ?1 a JSON array of entity ids, ?2 the per-entity limit
ENTITY_ASSERTIONS = f"""
WITH wanted(eid) AS (SELECT DISTINCT value FROM json_each(?1)),
hits AS (SELECT w.eid, a.assertion_id FROM wanted w JOIN assertions a ON a.subject_entity = w.eid
         UNION SELECT w.eid, a.assertion_id FROM wanted w JOIN assertions a ON a.object_entity = w.eid),
ranked AS (SELECT assertion_id, row_number() OVER (PARTITION BY eid ORDER BY assertion_id) AS r
           FROM hits)
SELECT {ASSERTION_COLS} FROM assertions a
WHERE a.assertion_id IN (SELECT assertion_id FROM ranked WHERE r <= ?2)
ORDER BY a.assertion_id
"""
ENTITY_MENTIONS = """
WITH wanted(eid) AS (SELECT DISTINCT value FROM json_each(?1)),
ranked AS (SELECT m.entity_id, m.support_id,
                  row_number() OVER (PARTITION BY m.entity_id ORDER BY m.support_id) AS r
           FROM wanted w JOIN mentions m ON m.entity_id = w.eid)
SELECT entity_id, support_id FROM ranked WHERE r <= ?2 ORDER BY entity_id, support_id
"""
ALL_SAME_AS = "SELECT source, target, score, method FROM same_as ORDER BY source, target"
ENTITY_SAME_AS = """
WITH wanted(eid) AS (SELECT DISTINCT value FROM json_each(?1))
SELECT x.source, x.target, x.score, x.method FROM same_as x WHERE x.source IN wanted
UNION SELECT x.source, x.target, x.score, x.method FROM same_as x WHERE x.target IN wanted
ORDER BY 1, 2
"""
MENTION_PAGES = """
SELECT w.value, count(DISTINCT p.doc_id || ':' || p.page)
FROM json_each(?1) w JOIN mentions m ON m.entity_id = w.value
JOIN supports s ON s.support_id = m.support_id
JOIN provenance p ON p.provenance_id = s.provenance_id
GROUP BY w.value
"""
ENTITY_DOCUMENTS = """
WITH wanted(eid) AS (SELECT DISTINCT value FROM json_each(?1))
SELECT w.eid, s.doc_id FROM wanted w JOIN mentions m ON m.entity_id = w.eid
JOIN supports s ON s.support_id = m.support_id
UNION SELECT w.eid, a.doc_id FROM wanted w JOIN assertions a ON a.subject_entity = w.eid
UNION SELECT w.eid, a.doc_id FROM wanted w JOIN assertions a ON a.object_entity = w.eid
ORDER BY 1, 2
"""
SUPPORTS_BY_ID = """
SELECT s.support_id, s.doc_id, s.kind, s.text, s.role, p.provenance_id, p.page, p.section_path,
       p.bbox, p.css_path, p.table_index, p.row, p.col, p.cell_ids, p.char_start, p.char_end
FROM json_each(?1) j JOIN supports s ON s.support_id = j.value
JOIN provenance p ON p.provenance_id = s.provenance_id
"""
