-- pilar embedded page index, schema version 4: evidence-unit vectors for
-- query-time unit selection (Tessera §3.4), float32 L2-normalised embeddings
-- of each unit's completed text, computed once at ingest.

CREATE TABLE unit_vectors (
    unit_id TEXT PRIMARY KEY,
    doc_id  TEXT NOT NULL,
    vector  BLOB NOT NULL
);
CREATE INDEX unit_vectors_doc ON unit_vectors(doc_id);
