// pilar graph schema, version 4: every location a document is known at, as
// the list d.sources (d.uri stays the first of them).
MATCH (d:Document) WHERE d.sources IS NULL SET d.sources = [d.uri];
