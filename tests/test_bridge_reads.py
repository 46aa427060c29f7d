"""The graph's reads for bridge expansion (PILAR §3.4), the contract of
every backend: where a bridge leads, which supports are template text, and
the reads each backend keeps following writes, on real documents of
``../shared/data/multihop2``."""

from __future__ import annotations

from pathlib import Path

import pytest

from pilar.ingest import parse
from tests.conftest import open_neo4j
from tests.test_bridges import INCIDENTS


def test_a_bridge_is_read_with_its_documents_and_pages(graph_store, shared_data: Path):
    """The contract of GraphStore.bridges on every backend."""
    docs = {n: parse(shared_data / "multihop2" / f"{n}.html")
            for n in ["ont_incident_ir_24_117", "ont_vessel_schedule_w24",
                      "ont_vessel_schedule_w23"]}
    for parsed in docs.values():
        graph_store.write_document(parsed)
    incident = docs["ont_incident_ir_24_117"]
    details = [s.support_id for s in incident.supports if "VC-24-1183" in s.text]
    found = {b.entity_id: b for b in graph_store.bridges(details, 10, 20)}
    call, crane = found["code:vc241183"], found["code:qc09"]
    assert call.name == "VC-24-1183" and set(call.supports) <= set(details)
    assert call.documents == 2 and crane.documents == 3
    w24 = docs["ont_vessel_schedule_w24"]
    reached = {pid for pid, _, _ in call.pages}
    assert reached == {incident.pages[0].page_id, w24.pages[0].page_id}
    sid = next(s for pid, s, _ in call.pages if pid == w24.pages[0].page_id)
    assert "VC-24-1183" in next(s.text for s in w24.supports if s.support_id == sid)
    capped = {b.entity_id: b for b in graph_store.bridges(details, 2, 20)}
    assert capped["code:qc09"].documents == 3 and capped["code:qc09"].pages == []
    assert capped["code:vc241183"].pages  # two documents: within the cap
    # a read kept between searches is not kept past a write: a fourth document names the crane
    graph_store.write_document(parse(shared_data / "multihop2" / "qc09_maintenance_log_2024.html"))
    again = {b.entity_id: b for b in graph_store.bridges(details, 10, 20)}
    assert again["code:qc09"].documents == 4 and again["code:vc241183"].documents == 2
    assert len({pid.rpartition(":")[0] for pid, _, _ in again["code:qc09"].pages}) == 4


@pytest.fixture(params=["sqlite", pytest.param("neo4j", marks=pytest.mark.neo4j)])
def server_and_cli(request, tmp_path):
    """Two graph stores on one backend, as a server and a CLI ingesting
    beside it: two stores on one SQLite file, or two on the real Neo4j
    (emptied first)."""
    if request.param == "sqlite":
        from pilar.db import SqliteDatabase
        from pilar.graph.sqlite import SqliteGraphStore

        yield tuple(SqliteGraphStore(SqliteDatabase(tmp_path / "pilar.sqlite")) for _ in "ab")
    else:
        server = request.getfixturevalue("neo4j_store")
        cli = open_neo4j(server.uri)
        yield server, cli
        cli.close()


def test_reads_kept_by_one_process_follow_another_process_s_write(server_and_cli,
                                                                  shared_data: Path):
    """The reads a server keeps between searches (bridges, template text,
    documents by id) are dropped when another process commits a write."""
    server, cli = server_and_cli
    incident = parse(shared_data / "multihop2" / "ont_incident_ir_24_117.html")
    cli.write_document(incident)
    details = [s.support_id for s in incident.supports if "QC-09" in s.text]
    assert {b.entity_id: b.documents for b in server.bridges(details)}["code:qc09"] == 1
    assert server.reads.get("mentions" if server.name == "sqlite" else "bridges 10 20",
                            details)[1] == []  # kept
    doc = incident.document.doc_id
    assert [d.status for d in server.documents([doc])] == ["ready"]
    log = parse(shared_data / "multihop2" / "qc09_maintenance_log_2024.html")
    cli.write_document(log)
    assert {b.entity_id: b.documents for b in server.bridges(details)}["code:qc09"] == 2
    assert server.template_supports(details) == cli.template_supports(details)
    assert [d.doc_id for d in server.documents([doc, log.document.doc_id])] == \
        [doc, log.document.doc_id]
    cli.set_status(doc, "deleting")  # a status change is a write too
    assert [d.doc_id for d in server.documents([doc, log.document.doc_id])] == \
        [log.document.doc_id]
    assert server.documents([doc], statuses=None)[0].status == "deleting"


def test_template_text_is_read_through_the_entities_it_names(graph_store, shared_data: Path):
    """The contract of GraphStore.template_supports on every backend: the
    footer every incident report carries is template text in three reports,
    not in four; an account of one incident never is."""
    docs = [parse(shared_data / "multihop2" / f"{n}.html") for n in INCIDENTS]
    for parsed in docs:
        graph_store.write_document(parsed)
    footers = [next(s.support_id for s in d.supports if s.text.startswith("ONT HSE incident"))
               for d in docs]
    account = next(s.support_id for s in docs[2].supports if "reported by HPD" in s.text)
    heading = next(s.support_id for s in docs[2].supports if s.text == "Incident record")
    asked = [*footers, account, heading, "no-such-support"]
    assert graph_store.template_supports(asked, 3) == set(footers)
    assert graph_store.template_supports(asked, 4) == set()
    assert graph_store.template_supports([], 3) == set()
    # an entity three documents mention is a hub when two is the most a bridge may have:
    # its mentions are not walked, and the footer names no other entity
    assert graph_store.template_supports(asked, 3, max_documents=2) == set()
