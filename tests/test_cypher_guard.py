"""Read-only Cypher on the real Neo4j of tests/servers/neo4j: every kind of
query that reads the server's files, makes it fetch a URL, administers it,
lists or calls what analysts need not, or writes is refused before it runs
(its EXPLAIN plan is checked); the server's own configuration refuses LOAD
CSV a second time; a query past its timeout ends server-side; results are cut
by a byte cap as well as the row cap. The faces: the Python API here, the CLI
(one ``error:`` line), REST and MCP in tests/api/test_cypher.py."""

from __future__ import annotations

import threading
import uuid
from pathlib import Path
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import neo4j
import pytest

from pilar import Pilar
from pilar.config import Settings
from pilar.errors import CypherError
from pilar.graph.neo4j_guard import INTERNAL_LABELS, UNLABELLED
from tests.conftest import FIXTURES
from tests.test_cli import pilar

pytestmark = pytest.mark.neo4j
KANPUR = FIXTURES / "corpus" / "204-541.html"
NOT_EVIDENCE = "is not part of the evidence graph (its nodes are the server's own records)"
SLOW = "UNWIND range(1, 100000000) AS x WITH x WHERE x % 7 = 3 RETURN count(x) AS n, '{marker}' AS m"


class _Counting(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - http.server's name
        self.server.hits.append(self.path)
        body = b"a,b\n1,2\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def web():
    """A real HTTP server on loopback serving /x.csv; ``hits`` lists the paths asked for."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Counting)
    server.hits = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def on_neo4j(neo4j_store, neo4j_uri, tmp_path) -> Pilar:
    p = Pilar(home=tmp_path / "neo", settings=Settings(graph="neo4j", neo4j_uri=neo4j_uri))
    assert [r.status for r in p.ingest([KANPUR])] == ["ingested"]
    yield p
    p.close()


def _url(web) -> str:
    return f"http://127.0.0.1:{web.server_address[1]}/x.csv"


REFUSED = {
    "LOAD CSV FROM 'file:///etc/passwd' AS l RETURN l": "LOAD CSV is not allowed",
    "LOAD CSV WITH HEADERS FROM {url} AS row RETURN row": "LOAD CSV is not allowed",
    "RETURN CASE WHEN rand() > 2 THEN COLLECT { LOAD CSV FROM {url} AS l RETURN l } END AS x":
        "LOAD CSV is not allowed",
    "CALL { LOAD CSV FROM {url} AS l RETURN l } RETURN l": "LOAD CSV is not allowed",
    "SHOW USERS": "administration commands are not allowed",
    "SHOW CURRENT USER": "administration commands are not allowed",
    "SHOW DATABASES": "administration commands are not allowed",
    "ALTER USER neo4j SET PASSWORD 'x'": "administration commands are not allowed",
    "SHOW PROCEDURES": "SHOW commands are not allowed",
    "SHOW SETTINGS": "SHOW commands are not allowed",
    "SHOW TRANSACTIONS": "SHOW commands are not allowed",
    "TERMINATE TRANSACTIONS 'neo4j-transaction-1'": "TERMINATE commands are not allowed",
    "CALL dbms.components()": "procedure dbms.components is not allowed",
    "CALL dbms.listConfig() YIELD name, value RETURN name, value": "procedure dbms.listConfig is not allowed",
    "CALL db.info()": "procedure db.info is not allowed",
    "MATCH (d:Document) WHERE EXISTS { CALL db.info() YIELD id RETURN id } RETURN d":
        "procedure db.info is not allowed",
    "RETURN CASE WHEN rand() > 2 THEN COUNT { CALL dbms.components() YIELD name RETURN name } "
    "END AS x": "procedure dbms.components is not allowed",
    "CALL db.createLabel('Hack')": "procedure db.createLabel is not allowed",
    "CREATE (n:Hack) RETURN n": "writes are not allowed",
    "MERGE (n:Hack {x: 1}) RETURN n": "writes are not allowed",
    "MATCH (d:Document) SET d.title = 'x' RETURN d": "writes are not allowed",
    "MATCH (d:Document) DETACH DELETE d": "writes are not allowed",
    "CREATE INDEX hack FOR (n:Hack) ON (n.x)": "schema and administration commands are not allowed",
    "MATCH (n) CALL (n) { RETURN n AS m } IN TRANSACTIONS RETURN m":
        "CALL { ... } IN TRANSACTIONS is not allowed",
    # the server's own records (job owners' digests, server paths) are not evidence
    "MATCH (j:Job) RETURN j.owner, j.paths": f"label Job {NOT_EVIDENCE}",
    "MATCH (j:`Job` {state: 'done'}) RETURN j": f"label Job {NOT_EVIDENCE}",
    "MATCH (q:JobQueue) RETURN q": f"label JobQueue {NOT_EVIDENCE}",
    "MATCH (m:SchemaMigration) RETURN m.version": f"label SchemaMigration {NOT_EVIDENCE}",
    "MATCH (d:Document|Job) RETURN d": f"label Job {NOT_EVIDENCE}",
    "MATCH (d:Document) WHERE d:Job OR d.title IS NULL RETURN d": f"label Job {NOT_EVIDENCE}",
    "MATCH (d:Document) RETURN d.title, COUNT { MATCH (j:Job) } AS jobs":
        f"label Job {NOT_EVIDENCE}",
    "MATCH (n) RETURN n.owner": UNLABELLED,
    "MATCH (n) WHERE n.owner IS NOT NULL RETURN n.paths": UNLABELLED,
    "MATCH (n) WHERE elementId(n) = '4:x:0' RETURN n": UNLABELLED,
    "MATCH (n:$('Job')) RETURN n": UNLABELLED,
    "MATCH (n:!Document) RETURN n": UNLABELLED,
    "RETURN COLLECT { MATCH (j) WHERE j.owner IS NOT NULL RETURN j.owner } AS owners": UNLABELLED,
    "MATCH (d:Document) WITH d MATCH (j) WHERE j.owner <> d.doc_id RETURN j": UNLABELLED,
}


@pytest.mark.parametrize("query", list(REFUSED))
def test_refused_before_it_runs(on_neo4j: Pilar, web, query):
    with pytest.raises(CypherError) as err:
        on_neo4j.cypher(query.replace("{url}", f"'{_url(web)}'"))
    assert err.value.refused and err.value.is_client_error
    assert str(err.value).startswith(f"query refused: {REFUSED[query]}"), str(err.value)
    assert web.hits == []  # the database never asked for the URL
    assert on_neo4j.stats()["documents"] == 1
    assert on_neo4j.cypher("MATCH (n:Hack) RETURN count(n) AS c").rows == [{"c": 0}]


def test_a_refused_procedure_is_named_with_the_allow_list(on_neo4j: Pilar):
    with pytest.raises(CypherError) as err:
        on_neo4j.cypher("CALL dbms.components()")
    assert str(err.value) == (
        "query refused: procedure dbms.components is not allowed (allowed: "
        "db.index.fulltext.queryNodes, db.index.fulltext.queryRelationships, db.labels, "
        "db.propertyKeys, db.relationshipTypes, db.schema.visualization)")


def test_the_evidence_graph_is_read_and_the_server_records_are_not(on_neo4j: Pilar,
                                                                   neo4j_store):
    """With a job record on the server (a real ``Job`` node, claimed, so the
    ``JobQueue`` node exists too), every label on the server is either
    evidence, read by Cypher, or one of the internal labels, refused; the
    analysts' queries of the README run."""
    from pilar.api.job_store_neo4j import Neo4jJobStore
    from pilar.api.jobs import new_job

    jobs = Neo4jJobStore(neo4j_store.driver)  # the fixture's driver: closed by the fixture
    job = new_job("default", files=["secret.pdf"])
    jobs.create(job, "owner-digest", [Path("/srv/private/secret.pdf")])
    assert jobs.claim(None) is not None
    try:
        records, _, _ = neo4j_store.driver.execute_query("CALL db.labels() YIELD label "
                                                         "RETURN label")
        labels = {r["label"] for r in records}
        assert {"Job", "JobQueue", "SchemaMigration", "Document", "Page", "Entity"} <= labels
        for label in sorted(labels):
            query = f"MATCH (n:`{label}`) RETURN count(n) AS c, collect(keys(n))[0] AS keys"
            if label in INTERNAL_LABELS:
                with pytest.raises(CypherError) as err:
                    on_neo4j.cypher(query)
                assert str(err.value) == f"query refused: label {label} {NOT_EVIDENCE}"
            else:
                assert on_neo4j.cypher(query).rows[0]["c"] > 0, label
        top = on_neo4j.cypher("MATCH (e:Entity)-[:MENTIONED_IN]->(s:Support) RETURN e.name, "
                              "count(s) AS n ORDER BY n DESC LIMIT 5").rows
        assert len(top) == 5 and top[0]["n"] >= top[-1]["n"] >= 1
        pages = on_neo4j.cypher("MATCH (d:Document)<-[:IN_DOCUMENT]-(p) RETURN count(p) AS c")
        assert pages.rows == [{"c": on_neo4j.stats()["pages"]}]
    finally:
        neo4j_store.driver.execute_query("MATCH (n) WHERE n:Job OR n:JobQueue DETACH DELETE n")


def test_admin_commands_the_server_refuses_are_client_errors(on_neo4j: Pilar):
    for query in ("CREATE DATABASE hack", "START DATABASE neo4j"):
        with pytest.raises(CypherError) as err:
            on_neo4j.cypher(query)
        assert err.value.is_client_error and not err.value.timed_out
        assert str(err.value).startswith("query refused: Neo.ClientError.Statement."), str(err.value)
        assert "\n" not in str(err.value)


def test_a_syntax_error_points_into_the_query_as_written(on_neo4j: Pilar):
    with pytest.raises(CypherError) as err:
        on_neo4j.cypher("MATCH (d:Document)\nRETURN e")
    assert str(err.value) == ("query refused: Neo.ClientError.Statement.SyntaxError: Variable `e` "
                              "not defined (line 2, column 8 (offset: 26))")
    with pytest.raises(CypherError) as err:
        on_neo4j.cypher("MATCH (d:Document RETURN d")
    assert "(line 1, column 19 (offset: 18))" in str(err.value)


def test_read_procedures_of_the_allow_list_run(on_neo4j: Pilar):
    labels = {r["label"] for r in on_neo4j.cypher("CALL db.labels() YIELD label RETURN label").rows}
    assert {"Document", "Page", "Support"} <= labels
    name = on_neo4j.cypher("MATCH (e:Entity) RETURN e.name AS name ORDER BY name LIMIT 1").rows[0]
    found = on_neo4j.cypher("CALL db.index.fulltext.queryNodes('entity_names', $q) YIELD node "
                            "RETURN node.name AS name", {"q": f'"{name["name"]}"'}).rows
    assert name in found


def test_the_server_refuses_load_csv_itself(neo4j_store, web):
    """Past pilar's plan check (the driver straight to the server), the
    server's configuration refuses file URLs and fetches no URL: the second wall."""
    for query in ("LOAD CSV FROM 'file:///etc/passwd' AS l RETURN l",
                  f"LOAD CSV FROM '{_url(web)}' AS l RETURN l",
                  f"LOAD CSV FROM '{_url(web).replace('127.0.0.1', 'localhost')}' AS l RETURN l"):
        with pytest.raises(neo4j.exceptions.ClientError) as err:
            neo4j_store.driver.execute_query(query, routing_=neo4j.RoutingControl.READ)
        assert err.value.code == "Neo.ClientError.Statement.ExternalResourceFailed", query
    assert web.hits == []


def _running(driver, marker: str) -> list[dict]:
    """Transactions on the server whose query holds ``marker`` (an admin session)."""
    records, _, _ = driver.execute_query(
        "SHOW TRANSACTIONS YIELD transactionId, currentQuery, status "
        "WHERE currentQuery CONTAINS $marker RETURN transactionId, status", marker=marker)
    return [r.data() for r in records]


def test_a_query_past_its_timeout_ends_on_the_server(on_neo4j: Pilar, neo4j_store):
    marker = f"pilar-timeout-{uuid.uuid4().hex}"
    with pytest.raises(CypherError) as err:
        on_neo4j.cypher(SLOW.format(marker=marker), timeout=0.5)
    assert err.value.timed_out and err.value.is_client_error
    assert str(err.value) == "query stopped: it ran past its timeout of 0.5 s (the server ended it)"
    assert _running(neo4j_store.driver, marker) == []


def test_rows_are_cut_at_the_byte_cap_and_the_row_cap(neo4j_store, neo4j_uri, tmp_path):
    p = Pilar(home=tmp_path / "neo", settings=Settings(graph="neo4j", neo4j_uri=neo4j_uri))
    one_row = p.cypher("UNWIND range(1, 200000) AS i RETURN collect(i) AS all")
    assert one_row.rows == [] and one_row.truncated
    assert one_row.message.startswith("cut at the byte cap of 1,048,576 bytes of rows "
                                      "(PILAR_CYPHER_MAX_BYTES) after 0 rows")
    rows = p.cypher("UNWIND range(1, 2000) AS i RETURN i")
    assert len(rows.rows) == 1000 and rows.truncated
    assert rows.message.startswith("cut at the row cap of 1,000 rows")
    whole = p.cypher("UNWIND range(1, 10) AS i RETURN i")
    assert [r["i"] for r in whole.rows] == list(range(1, 11))
    assert not whole.truncated and whole.message is None
    p.close()
    small = Pilar(home=tmp_path / "neo", settings=Settings(graph="neo4j", neo4j_uri=neo4j_uri,
                                                           cypher_max_bytes=100))
    cut = small.cypher("UNWIND range(1, 50) AS i RETURN i, 'xxxxxxxxxx' AS pad")
    # each row is {"i":N,"pad":"xxxxxxxxxx"}: 25 or 26 bytes, so three fit in 100
    assert [r["i"] for r in cut.rows] == [1, 2, 3] and cut.truncated
    assert "after 3 rows" in cut.message
    small.close()


def test_cli_refusal_is_one_error_line(on_neo4j: Pilar, neo4j_uri, web, tmp_path):
    env = {"PILAR_GRAPH": "neo4j", "NEO4J_URI": neo4j_uri}
    home = str(on_neo4j.settings.home)
    r = pilar("cypher", f"LOAD CSV FROM '{_url(web)}' AS l RETURN l", "--home", home,
              cwd=tmp_path, env=env)
    assert (r.code, r.stderr.splitlines(), r.stdout) == (
        2, ["error: query refused: LOAD CSV is not allowed (it reads files and URLs)"], "")
    r = pilar("cypher", SLOW.format(marker="cli"), "--timeout", "0.5", "--home", home,
              cwd=tmp_path, env=env)
    assert (r.code, r.stderr.splitlines()) == (
        1, ["error: query stopped: it ran past its timeout of 0.5 s (the server ended it)"])
    r = pilar("cypher", "UNWIND range(1, 200000) AS i RETURN collect(i) AS all", "--home", home,
              cwd=tmp_path, env=env)
    assert r.code == 0 and r.stderr.startswith("cut at the byte cap of 1,048,576 bytes")
    assert web.hits == []
