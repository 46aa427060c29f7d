-- pilar embedded store, schema version 9: stores written before version 8
-- shared every entity between collections. Each collection other than
-- 'default' gets its own copy ('<collection>:<entity id>') of the entities
-- its documents use (name, type and aliases as they were), its mentions and
-- assertions move to the copy, SAME_AS links between two copies of one
-- collection are copied, and the shared entities that no document of
-- 'default' uses any more go, with their links. A store without documents
-- outside 'default' is left as it is.
CREATE TEMP TABLE entity_uses AS
    SELECT m.entity_id, d.collection FROM mentions m
    JOIN supports s ON s.support_id = m.support_id JOIN documents d ON d.doc_id = s.doc_id
    UNION SELECT a.subject_entity, d.collection FROM assertions a
    JOIN documents d ON d.doc_id = a.doc_id WHERE a.subject_entity IS NOT NULL
    UNION SELECT a.object_entity, d.collection FROM assertions a
    JOIN documents d ON d.doc_id = a.doc_id WHERE a.object_entity IS NOT NULL;
CREATE TEMP TABLE entity_copies AS
    SELECT DISTINCT u.entity_id AS old, u.collection FROM entity_uses u
    JOIN entities e ON e.entity_id = u.entity_id
    WHERE e.collection = 'default' AND u.collection <> 'default';
INSERT INTO entities (entity_id, name, type, aliases, collection)
    SELECT x.collection || ':' || e.entity_id, e.name, e.type, e.aliases, x.collection
    FROM entity_copies x JOIN entities e ON e.entity_id = x.old;
UPDATE mentions SET entity_id = (
        SELECT d.collection FROM supports s JOIN documents d ON d.doc_id = s.doc_id
        WHERE s.support_id = mentions.support_id) || ':' || entity_id
    WHERE entity_id IN (SELECT old FROM entity_copies)
    AND support_id IN (SELECT s.support_id FROM supports s
                       JOIN documents d ON d.doc_id = s.doc_id
                       WHERE d.collection <> 'default');
UPDATE assertions SET
    subject_entity = CASE WHEN subject_entity IN (SELECT old FROM entity_copies)
        THEN (SELECT collection FROM documents d WHERE d.doc_id = assertions.doc_id)
             || ':' || subject_entity ELSE subject_entity END,
    object_entity = CASE WHEN object_entity IN (SELECT old FROM entity_copies)
        THEN (SELECT collection FROM documents d WHERE d.doc_id = assertions.doc_id)
             || ':' || object_entity ELSE object_entity END
    WHERE doc_id IN (SELECT doc_id FROM documents WHERE collection <> 'default');
INSERT OR IGNORE INTO same_as (source, target, score, method)
    SELECT a.collection || ':' || l.source, b.collection || ':' || l.target, l.score, l.method
    FROM same_as l JOIN entity_copies a ON a.old = l.source
    JOIN entity_copies b ON b.old = l.target AND b.collection = a.collection;
CREATE TEMP TABLE entity_orphans AS
    SELECT old AS entity_id FROM entity_copies
    WHERE old NOT IN (SELECT entity_id FROM entity_uses WHERE collection = 'default');
DELETE FROM same_as WHERE source IN (SELECT entity_id FROM entity_orphans)
    OR target IN (SELECT entity_id FROM entity_orphans);
DELETE FROM entities WHERE entity_id IN (SELECT entity_id FROM entity_orphans);
DROP TABLE entity_uses;
DROP TABLE entity_copies;
DROP TABLE entity_orphans;
