-- pilar embedded store, schema version 4: look supports up from their
-- provenance (page -> provenance -> support, the packing hot path).
CREATE INDEX IF NOT EXISTS supports_provenance ON supports(provenance_id);
