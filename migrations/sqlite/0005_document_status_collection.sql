-- pilar embedded store, schema version 5: collections and the document
-- status of the write protocol (DESIGN.md "Graph"). Every document belongs to
-- a collection (default 'default'); reads see documents whose status is
-- 'ready' ('pending' while written, 'deleting' while removed). The page
-- index keeps each page's collection so BM25 and dense reads filter on it.
ALTER TABLE documents ADD COLUMN collection TEXT NOT NULL DEFAULT 'default';
ALTER TABLE documents ADD COLUMN status TEXT NOT NULL DEFAULT 'ready'
    CHECK (status IN ('pending', 'ready', 'deleting'));
CREATE INDEX documents_status ON documents(status);
CREATE INDEX documents_collection ON documents(collection);

ALTER TABLE index_pages ADD COLUMN collection TEXT NOT NULL DEFAULT 'default';
CREATE INDEX index_pages_collection ON index_pages(collection);
