-- pilar embedded store, schema version 10: ingest-time statistics of each
-- evidence unit for packing (pilar/packing/statistics.py): the term counts of
-- its completed text (JSON object term -> occurrences) and their sum (BM25's
-- document length), and the reader-token count of its packed line with the
-- name of the tokenizer that counted it. NULL until known: units of a store
-- written before this version are filled on first read.
ALTER TABLE units ADD COLUMN term_counts TEXT;
ALTER TABLE units ADD COLUMN term_length INTEGER;
ALTER TABLE units ADD COLUMN line_tokens INTEGER;
ALTER TABLE units ADD COLUMN line_tokenizer TEXT;
