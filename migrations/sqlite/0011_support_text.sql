-- pilar embedded store, schema version 11: look supports up by their text
-- (template text, PILAR §3.4 multi-hop profile: the same line in several
-- documents naming the same entity, pilar/graph/sqlite_sql.py TEMPLATE_SUPPORTS).
CREATE INDEX IF NOT EXISTS supports_text ON supports(text);
