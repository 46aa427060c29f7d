-- pilar embedded page index, schema version 2: hybrid page retrieval
-- (PILAR §3.4). BM25 over an FTS5 table (porter stemming over unicode61
-- tokens) and dense vectors (float32, L2-normalised). A page has several
-- vectors: one per evidence unit on it (its completed text; unit_id set, and
-- reused by unit selection, Tessera §3.4), or text windows when it has no
-- units; a page's dense score is its best vector's cosine.

CREATE TABLE index_pages (
    rowid   INTEGER PRIMARY KEY,
    page_id TEXT NOT NULL UNIQUE,
    doc_id  TEXT NOT NULL,
    number  INTEGER NOT NULL,
    text    TEXT NOT NULL
);
CREATE INDEX index_pages_doc ON index_pages(doc_id);

CREATE VIRTUAL TABLE page_fts USING fts5(
    text, content='index_pages', content_rowid='rowid', tokenize='porter unicode61'
);
CREATE TRIGGER index_pages_ai AFTER INSERT ON index_pages BEGIN
    INSERT INTO page_fts(rowid, text) VALUES (new.rowid, new.text);
END;
CREATE TRIGGER index_pages_ad AFTER DELETE ON index_pages BEGIN
    INSERT INTO page_fts(page_fts, rowid, text) VALUES ('delete', old.rowid, old.text);
END;

CREATE TABLE page_vectors (
    page_rowid INTEGER NOT NULL REFERENCES index_pages(rowid) ON DELETE CASCADE,
    chunk      INTEGER NOT NULL,
    unit_id    TEXT,                             -- the unit embedded, if any
    vector     BLOB NOT NULL,                    -- float32 little-endian, L2-normalised
    PRIMARY KEY (page_rowid, chunk)
);
CREATE INDEX page_vectors_unit ON page_vectors(unit_id) WHERE unit_id IS NOT NULL;

CREATE TABLE index_meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
