-- pilar embedded store, schema version 8: collections never meet (DESIGN.md
-- "Graph"). The same bytes in two collections are two documents, so a
-- document's bytes are unique within its collection only: (sha256,
-- collection). SQLite cannot drop the old UNIQUE (sha256), so the table is
-- rebuilt (the runner applies migrations with foreign keys off and checks
-- them before committing; ids and rows are kept as they are).
CREATE TABLE documents_v8 (
    doc_id      TEXT PRIMARY KEY,
    uri         TEXT NOT NULL,
    title       TEXT NOT NULL DEFAULT '',
    media_type  TEXT NOT NULL,
    sha256      TEXT NOT NULL,
    n_pages     INTEGER NOT NULL,
    ingested_at TEXT NOT NULL,
    collection  TEXT NOT NULL DEFAULT 'default',
    status      TEXT NOT NULL DEFAULT 'ready' CHECK (status IN ('pending', 'ready', 'deleting'))
);
INSERT INTO documents_v8 (doc_id, uri, title, media_type, sha256, n_pages, ingested_at,
                          collection, status)
    SELECT doc_id, uri, title, media_type, sha256, n_pages, ingested_at, collection, status
    FROM documents;
DROP TABLE documents;
ALTER TABLE documents_v8 RENAME TO documents;
CREATE INDEX documents_uri ON documents(uri);
CREATE INDEX documents_status ON documents(status);
CREATE INDEX documents_collection ON documents(collection);
CREATE UNIQUE INDEX documents_bytes ON documents(sha256, collection);

-- Entities belong to one collection too (ids outside 'default' are
-- '<collection>:<type>:<name>'); those stored before are 'default' ones
-- until migration 9 gives other collections their own.
ALTER TABLE entities ADD COLUMN collection TEXT NOT NULL DEFAULT 'default';
CREATE INDEX entities_collection ON entities(collection);

