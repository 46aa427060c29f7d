-- pilar embedded store, schema version 1.
-- Graph layers (DESIGN.md "Graph"): documents, pages, supports, provenance,
-- table grids and evidence units. Keys are the same as in Neo4j.

CREATE TABLE documents (
    doc_id      TEXT PRIMARY KEY,
    uri         TEXT NOT NULL,
    title       TEXT NOT NULL DEFAULT '',
    media_type  TEXT NOT NULL,
    sha256      TEXT NOT NULL UNIQUE,
    n_pages     INTEGER NOT NULL,
    ingested_at TEXT NOT NULL
);
CREATE INDEX documents_uri ON documents(uri);

CREATE TABLE pages (
    page_id TEXT PRIMARY KEY,
    doc_id  TEXT NOT NULL REFERENCES documents(doc_id) ON DELETE CASCADE,
    number  INTEGER NOT NULL,
    width   REAL NOT NULL DEFAULT 0,
    height  REAL NOT NULL DEFAULT 0,
    text    TEXT NOT NULL DEFAULT '',
    UNIQUE (doc_id, number)
);

CREATE TABLE provenance (
    provenance_id TEXT PRIMARY KEY,
    doc_id        TEXT NOT NULL REFERENCES documents(doc_id) ON DELETE CASCADE,
    page          INTEGER NOT NULL,
    section_path  TEXT NOT NULL DEFAULT '[]',   -- JSON array of headings
    bbox          TEXT,                          -- JSON [x0, y0, x1, y1], PDF points
    css_path      TEXT,
    table_index   INTEGER,
    row           INTEGER,
    col           INTEGER,
    cell_ids      TEXT NOT NULL DEFAULT '[]',
    char_start    INTEGER,
    char_end      INTEGER
);
CREATE INDEX provenance_doc ON provenance(doc_id, page);

CREATE TABLE supports (
    support_id    TEXT PRIMARY KEY,
    doc_id        TEXT NOT NULL REFERENCES documents(doc_id) ON DELETE CASCADE,
    kind          TEXT NOT NULL,
    text          TEXT NOT NULL,
    role          TEXT NOT NULL DEFAULT 'primary',
    provenance_id TEXT NOT NULL REFERENCES provenance(provenance_id) ON DELETE CASCADE
);
CREATE INDEX supports_doc ON supports(doc_id);

CREATE TABLE table_grids (
    doc_id      TEXT NOT NULL REFERENCES documents(doc_id) ON DELETE CASCADE,
    table_index INTEGER NOT NULL,
    page        INTEGER NOT NULL,
    grid        TEXT NOT NULL,                   -- JSON of pilar.model.TableGrid
    PRIMARY KEY (doc_id, table_index)
);

CREATE TABLE units (
    unit_id        TEXT PRIMARY KEY,
    doc_id         TEXT NOT NULL REFERENCES documents(doc_id) ON DELETE CASCADE,
    page           INTEGER NOT NULL,
    kind           TEXT NOT NULL,
    text           TEXT NOT NULL,
    completed_text TEXT NOT NULL,
    support_id     TEXT NOT NULL,
    context        TEXT NOT NULL DEFAULT '[]',
    table_index    INTEGER,
    row_index      INTEGER,
    headers        TEXT NOT NULL DEFAULT '[]',
    cells          TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX units_page ON units(doc_id, page);
