-- pilar embedded store, schema version 3: the assertion and entity layers
-- (PILAR §3.2-3.3, App. E.2, E.5). Entities are shared across documents;
-- mentions, assertions and their support edges belong to one document.

CREATE TABLE assertions (
    assertion_id   TEXT PRIMARY KEY,
    doc_id         TEXT NOT NULL REFERENCES documents(doc_id) ON DELETE CASCADE,
    subject        TEXT NOT NULL,
    predicate      TEXT NOT NULL,
    object         TEXT NOT NULL,
    modality       TEXT NOT NULL,                 -- text | table | figure
    qualifiers     TEXT NOT NULL DEFAULT '{}',    -- JSON object
    confidence     REAL NOT NULL DEFAULT 1.0,
    grounded       INTEGER NOT NULL DEFAULT 1,
    extractor      TEXT NOT NULL DEFAULT '',
    subject_entity TEXT,                          -- Entity -SUBJECT_OF-> Assertion
    object_entity  TEXT                           -- Assertion -OBJECT-> Entity
);
CREATE INDEX assertions_doc ON assertions(doc_id);
CREATE INDEX assertions_subject ON assertions(subject_entity);
CREATE INDEX assertions_object ON assertions(object_entity);
CREATE INDEX assertions_predicate ON assertions(predicate);

CREATE TABLE assertion_supports (                 -- Assertion -SUPPORTED_BY {role}-> Support
    assertion_id TEXT NOT NULL REFERENCES assertions(assertion_id) ON DELETE CASCADE,
    support_id   TEXT NOT NULL REFERENCES supports(support_id) ON DELETE CASCADE,
    role         TEXT NOT NULL DEFAULT 'primary',
    PRIMARY KEY (assertion_id, support_id)
);
CREATE INDEX assertion_supports_support ON assertion_supports(support_id);

CREATE TABLE entities (
    entity_id TEXT PRIMARY KEY,
    name      TEXT NOT NULL,
    type      TEXT NOT NULL DEFAULT 'thing',
    aliases   TEXT NOT NULL DEFAULT '[]'          -- JSON array
);

CREATE VIRTUAL TABLE entity_fts USING fts5(
    name, aliases, content='entities', content_rowid='rowid', tokenize='unicode61 remove_diacritics 2'
);
CREATE TRIGGER entities_ai AFTER INSERT ON entities BEGIN
    INSERT INTO entity_fts(rowid, name, aliases) VALUES (new.rowid, new.name, new.aliases);
END;
CREATE TRIGGER entities_ad AFTER DELETE ON entities BEGIN
    INSERT INTO entity_fts(entity_fts, rowid, name, aliases) VALUES ('delete', old.rowid, old.name, old.aliases);
END;
CREATE TRIGGER entities_au AFTER UPDATE ON entities BEGIN
    INSERT INTO entity_fts(entity_fts, rowid, name, aliases) VALUES ('delete', old.rowid, old.name, old.aliases);
    INSERT INTO entity_fts(rowid, name, aliases) VALUES (new.rowid, new.name, new.aliases);
END;

CREATE TABLE mentions (                           -- Entity -MENTIONED_IN-> Support
    entity_id  TEXT NOT NULL REFERENCES entities(entity_id) ON DELETE CASCADE,
    support_id TEXT NOT NULL REFERENCES supports(support_id) ON DELETE CASCADE,
    PRIMARY KEY (entity_id, support_id)
);
CREATE INDEX mentions_support ON mentions(support_id);

CREATE TABLE same_as (                            -- Entity -SAME_AS {score, method}-> Entity
    source TEXT NOT NULL REFERENCES entities(entity_id) ON DELETE CASCADE,
    target TEXT NOT NULL REFERENCES entities(entity_id) ON DELETE CASCADE,
    score  REAL NOT NULL,
    method TEXT NOT NULL,
    PRIMARY KEY (source, target)
);
CREATE INDEX same_as_target ON same_as(target);
