// pilar graph schema, version 2: lookup indexes and full-text entity search.
CREATE INDEX document_sha256 IF NOT EXISTS FOR (d:Document) ON (d.sha256);
CREATE INDEX document_uri IF NOT EXISTS FOR (d:Document) ON (d.uri);
CREATE INDEX page_doc IF NOT EXISTS FOR (p:Page) ON (p.doc_id, p.number);
CREATE INDEX support_doc IF NOT EXISTS FOR (s:Support) ON (s.doc_id);
CREATE INDEX provenance_doc IF NOT EXISTS FOR (p:Provenance) ON (p.doc_id, p.page);
CREATE INDEX unit_doc IF NOT EXISTS FOR (u:Unit) ON (u.doc_id, u.page);
CREATE INDEX table_doc IF NOT EXISTS FOR (t:TableGrid) ON (t.doc_id);
CREATE INDEX assertion_doc IF NOT EXISTS FOR (a:Assertion) ON (a.doc_id);
CREATE INDEX assertion_predicate IF NOT EXISTS FOR (a:Assertion) ON (a.predicate);
CREATE INDEX entity_norm IF NOT EXISTS FOR (e:Entity) ON (e.norm);
CREATE FULLTEXT INDEX entity_names IF NOT EXISTS FOR (e:Entity) ON EACH [e.name, e.aliases_text];
