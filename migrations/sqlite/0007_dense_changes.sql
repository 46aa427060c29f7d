-- pilar embedded store, schema version 7: the change log the approximate
-- nearest-neighbour dense index (pilar/retrieval/dense.py) replays, so it is
-- updated incrementally and never re-read whole after a write. Triggers write
-- the log in the same transaction as the pages, so a rolled-back write leaves
-- no entry. A delete records how many vectors the page held (its ANN keys).
-- The index file beside the store is named for the last seq it holds and
-- this store's epoch; a file of another epoch, or ahead of the log, is rebuilt.
CREATE TABLE index_changes (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    page_rowid INTEGER NOT NULL,
    op         TEXT NOT NULL CHECK (op IN ('add', 'del')),
    n_vectors  INTEGER NOT NULL DEFAULT 0
);
CREATE TRIGGER index_pages_log_add AFTER INSERT ON index_pages BEGIN
    INSERT INTO index_changes (page_rowid, op) VALUES (new.rowid, 'add');
END;
CREATE TRIGGER index_pages_log_del BEFORE DELETE ON index_pages BEGIN
    INSERT INTO index_changes (page_rowid, op, n_vectors)
        VALUES (old.rowid, 'del',
                (SELECT count(*) FROM page_vectors WHERE page_rowid = old.rowid));
END;
-- pages indexed before this version
INSERT INTO index_changes (page_rowid, op) SELECT rowid, 'add' FROM index_pages ORDER BY rowid;
INSERT OR REPLACE INTO index_meta (key, value) VALUES ('dense_epoch', lower(hex(randomblob(8))));
