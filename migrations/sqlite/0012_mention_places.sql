-- pilar embedded store, schema version 12: each mention carries the document
-- and page of its support (as the support's provenance gives them), filled by
-- a trigger whoever inserts it, and an index of an entity's mentions by
-- document and page: bridge expansion (BRIDGES in pilar/graph/sqlite_sql.py)
-- counts an entity's documents and lists its pages from that index alone,
-- without a support and a provenance lookup per mention. A support never
-- moves (a changed document is deleted and written again), so neither does a
-- mention's place.
ALTER TABLE mentions ADD COLUMN doc_id TEXT;
ALTER TABLE mentions ADD COLUMN page INTEGER;
UPDATE mentions SET (doc_id, page) = (
    SELECT s.doc_id, p.page FROM supports s JOIN provenance p ON p.provenance_id = s.provenance_id
    WHERE s.support_id = mentions.support_id);
CREATE INDEX mentions_entity_place ON mentions(entity_id, doc_id, page, support_id);
CREATE TRIGGER mentions_place AFTER INSERT ON mentions BEGIN
    UPDATE mentions SET (doc_id, page) = (
        SELECT s.doc_id, p.page FROM supports s
        JOIN provenance p ON p.provenance_id = s.provenance_id
        WHERE s.support_id = new.support_id)
    WHERE rowid = new.rowid;
END;
