// pilar graph schema, version 6: graphs written before version 5 shared every
// entity between collections. Each collection other than 'default' gets its
// own copy ('<collection>:<entity id>') of the entities its documents use
// (name, type and aliases as they were), its mentions and assertions move to
// the copy, SAME_AS links between two copies of one collection are copied,
// and the shared entities that no document of 'default' uses any more go,
// with their links. A graph without documents outside 'default' is left as
// it is.
MATCH (d:Document) WHERE d.collection <> 'default'
MATCH (e:Entity {collection: 'default'})-[m:MENTIONED_IN]->(s:Support {doc_id: d.doc_id})
MERGE (c:Entity {entity_id: d.collection + ':' + e.entity_id})
  ON CREATE SET c.name = e.name, c.type = e.type, c.aliases = e.aliases,
                c.aliases_text = e.aliases_text, c.collection = d.collection
CREATE (c)-[:MENTIONED_IN]->(s)
DELETE m;
MATCH (d:Document) WHERE d.collection <> 'default'
MATCH (e:Entity {collection: 'default'})-[r:SUBJECT_OF]->(a:Assertion {doc_id: d.doc_id})
MERGE (c:Entity {entity_id: d.collection + ':' + e.entity_id})
  ON CREATE SET c.name = e.name, c.type = e.type, c.aliases = e.aliases,
                c.aliases_text = e.aliases_text, c.collection = d.collection
CREATE (c)-[:SUBJECT_OF]->(a)
DELETE r;
MATCH (d:Document) WHERE d.collection <> 'default'
MATCH (a:Assertion {doc_id: d.doc_id})-[r:OBJECT]->(e:Entity {collection: 'default'})
MERGE (c:Entity {entity_id: d.collection + ':' + e.entity_id})
  ON CREATE SET c.name = e.name, c.type = e.type, c.aliases = e.aliases,
                c.aliases_text = e.aliases_text, c.collection = d.collection
CREATE (a)-[:OBJECT]->(c)
DELETE r;
MATCH (d:Document) WHERE d.collection <> 'default'
WITH DISTINCT d.collection AS c
MATCH (x:Entity {collection: 'default'})-[l:SAME_AS]->(y:Entity {collection: 'default'})
MATCH (cx:Entity {entity_id: c + ':' + x.entity_id})
MATCH (cy:Entity {entity_id: c + ':' + y.entity_id})
MERGE (cx)-[n:SAME_AS]->(cy) SET n.score = l.score, n.method = l.method;
MATCH (e:Entity {collection: 'default'})
WHERE NOT (e)-[:MENTIONED_IN|SUBJECT_OF]->() AND NOT ()-[:OBJECT]->(e)
DETACH DELETE e;
