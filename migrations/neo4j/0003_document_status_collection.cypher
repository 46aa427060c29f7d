// pilar graph schema, version 3: collections and the document status of the
// write protocol (DESIGN.md "Graph"); documents stored before it are ready
// and in the default collection.
CREATE INDEX document_status IF NOT EXISTS FOR (d:Document) ON (d.status);
CREATE INDEX document_collection IF NOT EXISTS FOR (d:Document) ON (d.collection);
MATCH (d:Document) WHERE d.status IS NULL OR d.collection IS NULL
SET d.status = coalesce(d.status, 'ready'), d.collection = coalesce(d.collection, 'default');
