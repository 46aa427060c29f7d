"""Ingest at scale: parse worker processes, batched embedding across
documents, the vector cache, Ray (real files, real model,
real SQLite stores)."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from typer.testing import CliRunner

from pilar import Pilar
from pilar.cli import app
from pilar.retrieval.unit_runs import group_leaders, table_heads
from tests.conftest import FIXTURES

CORPUS = FIXTURES / "corpus"
SMALL = [CORPUS / "204-903.html", CORPUS / "203-345.html", CORPUS / "204-268.html"]


def _vectors(p: Pilar) -> dict[str, np.ndarray]:
    units = [u.unit_id for pid in p.graph.units_on_pages(
        [f"{d.doc_id}:1" for d in p.docs()]).values() for u in pid]
    return p.index.unit_vectors(units)


def _runs(p: Pilar) -> set[str]:
    """The first unit of each run of units (one vector per run)."""
    pages = p.graph.units_on_pages([f"{d.doc_id}:1" for d in p.docs()])
    return {lead for units in pages.values() for lead in group_leaders(units).values()}


def _tables(p: Pilar) -> int:
    """Schema vectors of the stored tables (one per table naming its columns)."""
    pages = p.graph.units_on_pages([f"{d.doc_id}:1" for d in p.docs()])
    return sum(len(table_heads(units)) for units in pages.values())


@pytest.fixture(scope="module")
def two_ways(tmp_path_factory):
    """The same files (one of them not a document) ingested with two parse
    workers and in process."""
    files = [SMALL[0], CORPUS / "questions.tsv", SMALL[1], SMALL[2]]
    out = {}
    for workers in (2, 0):
        p = Pilar(home=tmp_path_factory.mktemp(f"w{workers}"))
        out[workers] = (p, p.ingest(files, workers=workers))
    return out


def test_workers_give_the_same_store_as_in_process(two_ways):
    (par, par_results), (seq, seq_results) = two_ways[2], two_ways[0]
    assert [r.status for r in par_results] == ["ingested", "failed", "ingested", "ingested"]
    assert [r.status for r in seq_results] == [r.status for r in par_results]
    assert par_results[1].reason == seq_results[1].reason == \
        "unsupported file type: neither HTML nor PDF"
    assert par.stats() == seq.stats()
    assert par.stats()["documents"] == 3
    a, b = _vectors(par), _vectors(seq)
    assert a.keys() == b.keys() == _runs(par) and len(a) < par.stats()["units"]
    assert max(float(np.abs(a[k] - b[k]).max()) for k in a) < 1e-5


def test_results_carry_stage_seconds(two_ways):
    for r in two_ways[2][1]:
        if r.status == "ingested":
            assert set(r.stages) == {"read", "parse", "graph", "embed", "write"}
            assert r.stages["parse"] > 0 and r.stages["embed"] > 0 and r.stages["write"] > 0
            assert r.stages["read"] + r.stages["write"] < r.seconds


def test_a_copy_with_one_changed_byte_reuses_the_vectors(tmp_path):
    p = Pilar(home=tmp_path / "home")
    original = SMALL[0].read_bytes()
    assert original.startswith(b"<!--")
    copy = tmp_path / "copy.html"
    copy.write_bytes(b"<!-!" + original[4:])  # the source-URL comment, not the text
    assert p.ingest([SMALL[0]], workers=0)[0].status == "ingested"
    cached = p.embedder.cache.conn.execute("SELECT count(*) FROM vectors").fetchone()[0]
    assert cached == len(_runs(p)) + _tables(p) > 1  # one text per run and per table
    r = p.ingest([copy], workers=0)[0]
    assert r.status == "ingested" and r.n_units > 10
    assert p.embedder.cache.conn.execute("SELECT count(*) FROM vectors").fetchone()[0] == cached
    docs = {d.uri: d.doc_id for d in p.docs()}
    q = p.embedder.query("results of the race")
    first, second = (p.index.dense_for(q, [f"{docs[str(f.resolve())]}:1"])
                     for f in (SMALL[0], copy))
    assert list(first.values()) == pytest.approx(list(second.values()), abs=2e-3)  # float16


def test_cli_ingest_with_workers_reports_counts(tmp_path, monkeypatch):
    from pilar import cli

    # the bar (with pages/s and ETA) is drawn on terminals only; logs get the lines
    monkeypatch.setattr(cli.err, "_force_terminal", True)
    result = CliRunner().invoke(app, ["ingest", str(SMALL[0]), str(SMALL[1]), "--workers", "2",
                                      "--home", str(tmp_path / "home")])
    assert result.exit_code == 0, result.output
    assert "2 ingested, 0 replaced, 0 unchanged, 0 new source, 0 failed, 0 skipped" \
        in result.output
    assert "pages/s" in result.output


def test_ray_ingest_gives_the_same_store_counts_as_local(local_ray, tmp_path, two_ways):
    import subprocess
    import sys

    home = tmp_path / "ray-home"
    proc = subprocess.run([sys.executable, "-m", "pilar", "ingest", *map(str, SMALL),
                           "--ray", local_ray, "--home", str(home)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "3 ingested" in proc.stderr
    p = Pilar(home=home)
    local = two_ways[0][0]
    assert p.stats() == local.stats()
    a, b = _vectors(p), _vectors(local)
    assert a.keys() == b.keys()
    # int8 document vectors depend on their batch (activation scales are per batch):
    # Ray batches otherwise than one local ingest, so equal up to cosine 0.98
    assert min(float(a[k] @ b[k]) for k in a) > 0.98


def test_ray_at_an_unreachable_address_is_a_clean_error(tmp_path):
    pytest.importorskip("ray", reason="the extra pilar[ray] is not installed")
    result = CliRunner().invoke(app, ["ingest", str(SMALL[0]), "--ray", "127.0.0.1:1",
                                      "--home", str(tmp_path / "home")])
    assert result.exit_code == 2
    assert "cannot reach the Ray cluster at '127.0.0.1:1'" in result.output


@pytest.mark.parametrize("workers", [1, 0])
def test_a_pdf_reports_its_pages_from_a_worker_as_in_process(workers):
    """Per-page progress of a long PDF, whether parsed in a worker or here:
    every report is of its own file, pages rise, and the last page comes."""
    from pilar.config import Settings
    from pilar.ingest.parallel import parse_many

    pdf = FIXTURES / "pdf" / "diesel_engines-p1-3.pdf"
    html = FIXTURES / "corpus" / "204-541.html"
    reports = []
    jobs = [("html", html.read_bytes(), str(html), None),
            ("pdf", pdf.read_bytes(), str(pdf), None)]
    parsed = list(parse_many(jobs, Settings(pdf_layout="rules"), workers,
                             on_page=lambda tag, done, total: reports.append((tag, done, total))))
    assert [p.tag for p in parsed] == ["html", "pdf"] and all(p.document for p in parsed)
    assert {tag for tag, _, _ in reports} == {"pdf"}
    done = [d for _, d, _ in reports]
    assert done == sorted(done) and reports[-1] == ("pdf", 3, 3)


def test_an_ingest_told_to_stop_or_cancel_keeps_exactly_what_it_reported(tmp_path):
    from pilar.errors import IngestCancelled

    html = sorted(CORPUS.glob("*.html"))
    empty = tmp_path / "empty.html"
    empty.write_bytes(b"")
    small = []  # more files than the parse workers take ahead (parallel.parse_many)
    for i in range(40):
        small.append(tmp_path / f"small-{i}.html")
        small[-1].write_text(f"<html><body><h1>Page {i}</h1><p>Small page number {i}.</p>"
                             "</body></html>")
    files = [html[0], empty, *html[1:8], *small]  # the empty file stores the first one at once
    p = Pilar(home=tmp_path / "home")
    stop = threading.Event()
    results = p.ingest_job(files, "default", lambda r: stop.set(), stop=stop)
    # no file is begun once told to stop: the files begun are finished, in order
    assert 2 <= len(results) < len(files)
    assert [r.path for r in results] == [str(f) for f in files[:len(results)]]
    assert [r.status for r in results[:2]] == ["ingested", "failed"]
    assert sorted(d.doc_id for d in p.docs()) == sorted(r.doc_id for r in results if r.doc_id)
    # cancelled at the first result: what was reported is stored, nothing else
    cancel, reported = threading.Event(), []

    def progress(result) -> None:
        reported.append(result)
        cancel.set()

    with pytest.raises(IngestCancelled):
        p.ingest_job([html[8], empty, *html[9:]], "other", progress, cancel=cancel)
    assert [r.status for r in reported][:1] == ["ingested"]
    assert sorted(d.doc_id for d in p.docs(collections=["other"])) == \
        sorted(r.doc_id for r in reported if r.doc_id)
    assert len(p.docs(collections=["other"])) < len(html[8:])
    p.close()


def test_a_served_job_on_ray_gives_the_same_store_counts_as_local(local_ray, tmp_path,
                                                                  two_ways):
    """PILAR_RAY_ADDRESS: the ingest worker of ``pilar serve`` runs a job's
    parses and embeddings as Ray tasks (its process a driver of the cluster)."""
    import ray._private.state

    from tests.api.shared import FULL, upload
    from tests.serving import ApiServer, wait_job

    server = ApiServer(tmp_path / "served", {"PILAR_API_KEYS": FULL, "PILAR_API_RATE_LIMIT": "",
                                             "PILAR_RAY_ADDRESS": local_ray}).start()
    try:
        with server.client(FULL) as client:
            done = wait_job(client, upload(client, SMALL, "default")["job_id"])
    finally:
        server.stop()
    assert done["state"] == "done" and done["counts"] == {"ingested": 3}, done
    drivers = [j["Entrypoint"] for j in ray._private.state.jobs()]
    assert any("pilar worker" in d for d in drivers), drivers  # the job's worker ran on Ray
    p = Pilar(home=tmp_path / "served")
    local = two_ways[0][0]
    assert p.stats() == local.stats()
    a, b = _vectors(p), _vectors(local)
    assert a.keys() == b.keys()
    # int8 document vectors depend on their batch (activation scales are per batch):
    # Ray batches otherwise than one local ingest, so equal up to cosine 0.98
    assert min(float(a[k] @ b[k]) for k in a) > 0.98
    p.close()
