"""The Pilar facade on both stacks: the embedded SQLite file, and Neo4j +
Elasticsearch with no SQLite file at all (real servers, started by
./scripts/test). Collections, the document status as the visibility switch,
an ingest killed with SIGKILL mid-document, and Elasticsearch going away
mid-batch."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from urllib.parse import urlparse

import pytest

from pilar import Pilar
from pilar.config import Settings
from pilar.errors import StoreError, UnknownScopeError
from pilar.retrieval.unit_runs import group_leaders
from tests.conftest import FIXTURES, ROOT

CORPUS = FIXTURES / "corpus"
KANPUR = CORPUS / "204-541.html"      # "what is the tallest building in kanpur?"
SOPHIE = CORPUS / "204-903.html"      # Sophie Colquhoun
OTHER = CORPUS / "204-268.html"


@pytest.fixture(params=["embedded", pytest.param(
    "servers", marks=[pytest.mark.neo4j, pytest.mark.elasticsearch])])
def stack(request, tmp_path) -> Settings:
    """Settings for one stack: the embedded store, or Neo4j (emptied) +
    Elasticsearch (indexes of this test only)."""
    home = tmp_path / "home"
    if request.param == "embedded":
        return Settings(home=home)
    request.getfixturevalue("neo4j_store")
    es = request.getfixturevalue("es_index")
    return Settings(home=home, graph="neo4j", index="elasticsearch",
                    neo4j_uri=os.environ["NEO4J_URI"], elasticsearch_url=es.url,
                    elasticsearch_index=es.prefix)


def _page_ids(p: Pilar, question: str, **kw) -> list[str]:
    return [pg.page_id for pg in p.search(question, k=10, **kw).pages]


def test_collections_filter_search_and_docs(stack):
    p = Pilar(settings=stack)
    [kanpur] = p.ingest([KANPUR], collection="cities")
    [sophie, other] = p.ingest([SOPHIE, OTHER])
    assert {d.doc_id: d.collection for d in p.docs()} == {
        kanpur.doc_id: "cities", sophie.doc_id: "default", other.doc_id: "default"}
    assert [d.doc_id for d in p.docs(collections=["cities"])] == [kanpur.doc_id]
    q = "what is the tallest building in kanpur?"
    assert _page_ids(p, q)[0] == f"{kanpur.doc_id}:1"
    outside = _page_ids(p, q, collections=["default"])
    assert outside and f"{kanpur.doc_id}:1" not in outside
    assert _page_ids(p, q, collections=["cities"]) == [f"{kanpur.doc_id}:1"]
    assert _page_ids(p, q, doc_ids=[sophie.doc_id]) == [f"{sophie.doc_id}:1"]
    # a scope that holds nothing is the same error on every face (issue 32: one request)
    with pytest.raises(UnknownScopeError, match=f"no document with id '{sophie.doc_id}' in the "
                                                 "collections given"):
        p.search(q, collections=["cities"], doc_ids=[sophie.doc_id])
    with pytest.raises(UnknownScopeError, match="no documents in collection 'nowhere'"):
        p.search(q, collections=["nowhere"])
    result = p.search(q, collections=["default"], budget=400)
    assert all(c.doc_id != kanpur.doc_id for c in result.packet.citations)
    with pytest.raises(TypeError, match="collections must be a list of strings"):
        p.search(q, collections="cities")


def test_server_stack_keeps_no_sqlite_file_and_reads_unit_vectors(stack):
    p = Pilar(settings=stack)
    [r] = p.ingest([KANPUR])
    assert r.status == "ingested"
    units = p.graph.units_on_pages([f"{r.doc_id}:1"])[f"{r.doc_id}:1"]
    vectors = p.index.unit_vectors([u.unit_id for u in units])
    leaders = group_leaders(units)  # one vector per run of units of one context
    assert len(units) == r.n_units == 9
    assert sorted(vectors) == sorted(set(leaders.values())) and len(vectors) == 3
    assert p.settings.db_path.exists() is (stack.graph == "sqlite")
    assert "Ratan Planet" in p.search("tallest building in kanpur", budget=500).packet.text
    assert p.delete(r.doc_id) is True
    assert p.docs() == [] and p.index.count() == 0


def test_replacing_a_document_leaves_only_the_new_version(stack, tmp_path):
    p = Pilar(settings=stack)
    doc = tmp_path / "page.html"
    shutil.copy(SOPHIE, doc)
    first = p.ingest([doc])[0]
    doc.write_bytes(doc.read_bytes().replace(b"Sophie Colquhoun", b"Sophie Q. Colquhoun"))
    second = p.ingest([doc])[0]
    assert (first.status, second.status) == ("ingested", "replaced")
    assert [d.doc_id for d in p.graph.documents(statuses=None)] == [second.doc_id]
    assert p.index.count() == 1
    assert p.index.bm25("Colquhoun", 5).keys() == {f"{second.doc_id}:1"}


def test_a_batch_is_written_together_and_a_bad_document_fails_alone(stack, monkeypatch):
    from pilar.ingest import document_id, new_document

    p = Pilar(settings=stack)
    writes: list[list[str]] = []
    original = type(p.index).add_documents
    poisoned: list[str] = []

    # FAULT INJECTION: the index refuses any write holding the poisoned document
    def add_documents(self, docs):
        ids = [d.pages[0].doc_id for d in docs]
        writes.append(ids)
        if set(ids) & set(poisoned):
            original(self, [d for d in docs if d.pages[0].doc_id not in poisoned])
            raise StoreError("index write refused (injected)")
        original(self, docs)

    monkeypatch.setattr(type(p.index), "add_documents", add_documents)
    poisoned.append(document_id(new_document(SOPHIE.read_bytes(), "", "").sha256, "default"))
    results = p.ingest([KANPUR, SOPHIE, OTHER])
    assert [r.status for r in results] == ["ingested", "failed", "ingested"]
    assert results[1].reason == "index write refused (injected)"
    # one write for the batch, then each document alone
    kanpur, sophie, other = results[0].doc_id, poisoned[0], results[2].doc_id
    assert writes == [[kanpur, sophie, other], [kanpur], [sophie], [other]]
    assert {d.doc_id: d.status for d in p.graph.documents(statuses=None)} == {
        results[0].doc_id: "ready", results[2].doc_id: "ready"}
    assert p.index.count() == 2
    assert _page_ids(p, "what is the tallest building in kanpur?")[0] == f"{results[0].doc_id}:1"


# -- SIGKILL mid-document ------------------------------------------------------------

_CHILD = """
import json, sys, time
from pilar import Pilar
from pilar.config import Settings
settings = Settings(**json.loads(sys.argv[1]))
p = Pilar(settings=settings)
stage = sys.argv[2]
# FAULT INJECTION: stop at a stage of the write protocol and wait for SIGKILL
target = p.index if stage == "index" else p.graph
name = "add_documents" if stage == "index" else "write_documents"
original = getattr(target, name)
def paused(*args, **kwargs):
    if stage == "index":
        original(*args, **kwargs)      # the index holds the pages ...
    print("AT", stage, flush=True)     # ... or the graph write is about to start
    time.sleep(600)
setattr(target, name, paused)
p.ingest([sys.argv[3]])
"""


def _settings_json(s: Settings) -> str:
    keys = ("home", "graph", "index", "neo4j_uri", "elasticsearch_url", "elasticsearch_index")
    return json.dumps({k: str(getattr(s, k)) if getattr(s, k) is not None else None for k in keys})


@pytest.mark.parametrize("stage", ["index", "graph"])
def test_sigkill_mid_document_leaves_nothing_visible_and_a_rerun_completes(stack, stage):
    p = Pilar(settings=stack)
    [kept] = p.ingest([OTHER])
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen([sys.executable, "-c", _CHILD, _settings_json(stack), stage,
                              str(KANPUR)], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert child.stdout.readline().strip() == f"AT {stage}"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert child.returncode == -signal.SIGKILL
    q = "what is the tallest building in kanpur?"
    # nothing of the killed document is visible, on either stack
    assert [d.doc_id for d in p.docs()] == [kept.doc_id]
    assert all(pid.startswith(kept.doc_id) for pid in _page_ids(p, q))
    leftovers = [d.status for d in p.graph.documents(statuses=None) if d.doc_id != kept.doc_id]
    assert leftovers == ([] if stack.graph == "sqlite" else ["pending"])
    # the next ingest of the same file completes it
    [again] = p.ingest([KANPUR])
    assert again.status == "ingested"
    assert {d.doc_id: d.status for d in p.graph.documents(statuses=None)} == {
        kept.doc_id: "ready", again.doc_id: "ready"}
    assert p.index.count() == 2
    assert _page_ids(p, q)[0] == f"{again.doc_id}:1"


# -- Elasticsearch gone mid-batch --------------------------------------------------


@pytest.mark.elasticsearch
def test_elasticsearch_stopped_mid_batch_gives_a_clear_error_and_nothing_half_visible(
        es_index, tmp_path, monkeypatch):
    from tests.fault_proxy import CuttableProxy

    # each document embedded and stored on its own (not batched with the next
    # ones), so the first file's progress comes before the second is written
    monkeypatch.setattr("pilar.ingest_run.EMBED_BATCH_UNITS", 1)

    target = urlparse(es_index.url)
    proxy = CuttableProxy((target.hostname, target.port))
    settings = Settings(home=tmp_path / "home", index="elasticsearch",
                        elasticsearch_url=proxy.url, elasticsearch_index=es_index.prefix)
    p = Pilar(settings=settings)
    try:
        stopped = []

        def progress(result):
            if not stopped:  # the service goes away after the first file
                proxy.cut()
                stopped.append(result.path)

        results = p.ingest([OTHER, KANPUR, SOPHIE], progress=progress)
        assert [r.status for r in results] == ["ingested", "failed", "failed"]
        for r in results[1:]:
            assert r.reason.startswith(f"cannot reach Elasticsearch at {proxy.url}")
            assert "\n" not in r.reason
        assert [d.doc_id for d in p.docs()] == [results[0].doc_id]
        proxy.restore()
        assert es_index.count() == 1  # the failed documents left no page behind
        again = p.ingest([KANPUR, SOPHIE])
        assert [r.status for r in again] == ["ingested", "ingested"]
        assert len(p.docs()) == 3 and p.index.count() == 3
        assert {d.status for d in p.graph.documents(statuses=None)} == {"ready"}
    finally:
        proxy.close()


def test_cli_switches_to_the_server_backends(tmp_path):
    from typer.testing import CliRunner

    from pilar.cli import app

    env = {"PILAR_INDEX": "elasticsearch", "ELASTICSEARCH_URL": "", "PILAR_GRAPH": "sqlite"}
    result = CliRunner().invoke(app, ["docs", "--home", str(tmp_path)], env=env)
    assert result.exit_code == 2
    assert "PILAR_INDEX=elasticsearch needs ELASTICSEARCH_URL" in result.output
    assert "Traceback" not in result.output
    env = {"PILAR_INDEX": "elasticsearch", "ELASTICSEARCH_URL": "http://127.0.0.1:9",
           "PILAR_GRAPH": "sqlite"}
    result = CliRunner().invoke(app, ["docs", "--home", str(tmp_path)], env=env)
    assert result.exit_code == 1  # a store that cannot be reached (pilar.cli's exit codes)
    assert "cannot reach Elasticsearch at http://127.0.0.1:9" in result.output


@pytest.mark.elasticsearch
def test_cli_on_elasticsearch_lists_and_searches_by_collection(es_index, tmp_path):
    from typer.testing import CliRunner

    from pilar.cli import app

    env = {"PILAR_INDEX": "elasticsearch", "ELASTICSEARCH_URL": es_index.url,
           "PILAR_ELASTICSEARCH_INDEX": es_index.prefix}
    home = ["--home", str(tmp_path)]
    runner = CliRunner()
    ingested = runner.invoke(app, ["ingest", str(KANPUR), "--collection", "cities", *home], env=env)
    assert ingested.exit_code == 0, ingested.output
    listed = runner.invoke(app, ["docs", "--json", "--collection", "cities", *home], env=env)
    assert [d["collection"] for d in json.loads(listed.output)] == ["cities"]
    other = runner.invoke(app, ["ingest", str(OTHER), *home], env=env)  # collection default
    assert other.exit_code == 0, other.output
    found = runner.invoke(app, ["search", "tallest building kanpur", "--json", "--collection",
                                "default", *home], env=env)
    assert found.exit_code == 0, found.output
    pages = json.loads(found.stdout)["pages"]
    assert pages and not any(KANPUR.name in json.dumps(pg) for pg in pages)
    nowhere = runner.invoke(app, ["search", "kanpur", "--json", "--collection", "nope", *home],
                            env=env)
    assert nowhere.exit_code == 1
    assert json.loads(nowhere.stdout)["error"].startswith("no documents in collection 'nope'")
    assert es_index.count() == 2
