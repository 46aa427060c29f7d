// pilar graph schema, version 5: collections never meet (DESIGN.md "Graph").
// Documents are found by their bytes within a collection (sha256,
// collection); entities belong to one collection (ids outside 'default' are
// '<collection>:<type>:<name>'): those stored before are 'default' ones until
// migration 6 gives other collections their own.
CREATE INDEX document_bytes IF NOT EXISTS FOR (d:Document) ON (d.sha256, d.collection);
CREATE INDEX entity_collection IF NOT EXISTS FOR (e:Entity) ON (e.collection);
MATCH (e:Entity) WHERE e.collection IS NULL SET e.collection = 'default';
