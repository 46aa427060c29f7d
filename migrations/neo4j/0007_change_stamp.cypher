// pilar graph schema, version 7: one (:ChangeStamp {id: 'graph'}) node whose
// version every write transaction of the graph sets anew (a random UUID), so a
// process keeps its reads until another commits (pilar.parts.ReadCache); the
// constraint makes its MERGE safe between concurrent writers.
CREATE CONSTRAINT change_stamp_id IF NOT EXISTS FOR (s:ChangeStamp) REQUIRE s.id IS UNIQUE;
