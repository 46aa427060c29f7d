-- pilar embedded store, schema version 6: every location a document is
-- known at (the same bytes copied to another path add a row; documents.uri
-- stays the first of them).
CREATE TABLE document_sources (
    doc_id   TEXT NOT NULL REFERENCES documents(doc_id) ON DELETE CASCADE,
    uri      TEXT NOT NULL,
    added_at TEXT NOT NULL,
    PRIMARY KEY (doc_id, uri)
);
CREATE INDEX document_sources_uri ON document_sources(uri);
INSERT INTO document_sources (doc_id, uri, added_at)
    SELECT doc_id, uri, ingested_at FROM documents ORDER BY ingested_at, uri;
