"""Parse budgets and page caps: every file is parsed in a worker process
within a memory limit and a deadline, a page over a cap fails its file with
one line, the batch goes on, and workers die with their parent (real files:
the generated hostile PDFs of tests/fixtures/hostile/make.py and the real
corpora; real worker processes; real SQLite stores)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import psutil
import pytest

from pilar import Pilar
from pilar.config import Settings
from pilar.errors import ConfigError, IngestError
from pilar.ingest import parse
from pilar.ingest.parallel import parse_many
from tests.conftest import FIXTURES, ROOT
from tests.processes import alive, kill_and_wait, parse_workers

GOOD_PDF = FIXTURES / "pdf" / "204-268.pdf"
GOOD_HTML = FIXTURES / "corpus" / "204-903.html"
UNCAPPED = {"pdf_max_page_content_bytes": 2**40, "pdf_max_page_chars": 10**9,
            "pdf_max_page_units": 10**9, "pdf_max_page_supports": 10**9}
"""Page caps out of the way, so that only the budgets stop a bomb."""


def _jobs(*paths):
    return [(p.name, p.read_bytes(), str(p), None) for p in paths]


def _index(folder):
    return [json.loads(line) for line in (folder / "index.jsonl").read_text().splitlines()]


def test_each_hostile_file_is_refused_or_ingested_as_its_index_says(made_hostile):
    entries = _index(made_hostile)
    assert len(entries) == 7 and all(e["kind"] and e["expect"] for e in entries)
    assert (made_hostile / "content-bomb-1g.pdf").stat().st_size < 4_000_000
    files = [made_hostile / e["file"] for e in entries]
    # a good file between each pair of hostile ones: the batch goes on
    jobs = _jobs(*[f for pair in zip(files, [GOOD_HTML] * len(files)) for f in pair])
    results = {r.tag: r for r in parse_many(jobs, Settings(), workers=2)}
    assert results[GOOD_HTML.name].document is not None
    for e in entries:
        r = results[e["file"]]
        if e["reason"] is None:
            assert r.reason is None and r.document is not None, (e["file"], r.reason)
        else:
            assert r.document is None and r.reason.startswith(e["reason"]), (e["file"], r.reason)
            assert "\n" not in r.reason


def test_nested_graphics_states_leave_an_empty_page_with_a_warning(made_hostile):
    doc = parse(made_hostile / "nested-q-0.pdf")
    assert len(doc.pages) == 1 and doc.units == []
    assert doc.warnings[0] == "page 1: unreadable, skipped (too many nested graphics states)"


def test_the_content_cap_names_the_page_and_the_setting(made_hostile):
    with pytest.raises(IngestError) as info:
        parse(made_hostile / "content-bomb-16m.pdf",
              settings=Settings(pdf_max_page_content_bytes=4 * 1024 * 1024))
    assert str(info.value) == ("page 1: its content streams inflate to over 4 MiB, the "
                               "per-page limit (PILAR_PDF_MAX_PAGE_CONTENT_BYTES)")
    # at the cap's default a real page goes through
    assert parse(GOOD_PDF).units


@pytest.mark.parametrize("setting,line", [
    ("pdf_max_page_units", "page 1: over 5 evidence units, the per-page limit "
                           "(PILAR_PDF_MAX_PAGE_UNITS)"),
    ("pdf_max_page_supports", "page 1: over 5 supports, the per-page limit "
                              "(PILAR_PDF_MAX_PAGE_SUPPORTS)"),
    ("pdf_max_page_chars", "page 1: {chars:,} characters of text, over the 5-character "
                           "per-page limit (PILAR_PDF_MAX_PAGE_CHARS)"),
])
def test_units_supports_and_characters_per_page_are_capped(setting, line):
    import pymupdf

    assert len(parse(GOOD_PDF).units) > 5
    text = pymupdf.open(GOOD_PDF)[0].get_text()  # what MuPDF reads, line breaks not counted
    with pytest.raises(IngestError) as info:
        parse(GOOD_PDF, settings=Settings(**{setting: 5}))
    assert str(info.value) == line.format(chars=len(text) - text.count("\n"))


@pytest.mark.timeout(300)
def test_a_parse_over_the_memory_budget_fails_and_its_worker_is_replaced(made_hostile):
    settings = Settings(parse_memory_bytes=256 * 1024 * 1024, pdf_layout="rules", **UNCAPPED)
    bomb = made_hostile / "content-bomb-16m.pdf"
    first, after = parse_many(_jobs(bomb, GOOD_PDF), settings, workers=1)
    assert first.document is None
    assert first.reason == "over the 256 MiB parse memory limit (PILAR_PARSE_MEMORY_BYTES)"
    assert after.reason is None and len(after.document.units) == len(parse(GOOD_PDF).units)


@pytest.mark.timeout(300)
def test_a_long_pdf_within_the_memory_budget_is_parsed_whole(shared_data):
    # a worker maps far more than it holds resident (library text, reserved arenas,
    # the heap's high-water mark after freed pages are handed back): the budget bounds
    # what a parse adds to its resident size, not the address space it starts with
    settings = Settings(parse_memory_bytes=256 * 1024 * 1024)
    long_pdf = shared_data / "pdf" / "real" / "diesel_engines.pdf"
    (done,) = parse_many(_jobs(long_pdf), settings, workers=1)
    assert done.reason is None
    assert len(done.document.pages) == 23
    assert [p.number for p in done.document.pages] == list(range(1, 24))
    assert len(done.document.units) == len(parse(long_pdf).units)


@pytest.mark.timeout(300)
def test_a_parse_past_the_deadline_is_killed_and_the_batch_goes_on(made_hostile):
    settings = Settings(parse_seconds=1, parse_page_seconds=1, pdf_layout="rules", **UNCAPPED)
    bomb = made_hostile / "content-bomb-64m.pdf"  # about 15 s to read with these settings
    first, after = parse_many(_jobs(bomb, GOOD_HTML), settings, workers=1)
    assert first.document is None
    assert first.reason == "over the 1 s + 1 s per PDF page parse deadline (PILAR_PARSE_SECONDS)"
    assert after.reason is None and after.document.units


def test_an_ingest_stores_the_good_files_and_nothing_of_the_refused(made_hostile, tmp_path):
    p = Pilar(home=tmp_path / "home")
    files = [made_hostile / "content-bomb-1g.pdf", GOOD_HTML,
             made_hostile / "xobject-100k-0.pdf", GOOD_PDF]
    results = p.ingest(files, workers=2)
    assert [r.status for r in results] == ["failed", "ingested", "failed", "ingested"]
    assert results[0].reason.startswith("page 1: its content streams inflate to over 8 MiB")
    assert results[2].reason.startswith("page 1: 500,000 characters of text")
    assert p.stats()["documents"] == 2
    assert p.graph.documents(statuses=("pending", "deleting")) == []
    assert sorted(d.uri for d in p.docs()) == sorted(str(f.resolve()) for f in (GOOD_HTML, GOOD_PDF))


def _forkserver_children() -> list[psutil.Process]:
    """The live worker processes this test process's forkserver started."""
    return alive(parse_workers([psutil.Process()]))


def test_a_run_stopped_by_a_bad_setting_leaves_no_worker(tmp_path):
    bad = tmp_path / "predicates.toml"
    bad.write_text("this is [not toml")
    settings = Settings(predicates_path=bad)
    with pytest.raises(ConfigError):
        list(parse_many(_jobs(GOOD_HTML, GOOD_PDF, GOOD_HTML), settings, workers=2))
    assert _forkserver_children() == []
    # and the next run starts fresh workers that parse
    (r,) = parse_many(_jobs(GOOD_HTML), Settings(), workers=2)
    assert r.document is not None and _forkserver_children() == []


def _kill_mid_run(args: list[str], home, roots) -> None:
    """Run ``pilar ARGS``; once two parse workers run below the processes
    ``roots(main)`` returns, SIGKILL the main process and assert that no
    worker (nor forkserver) below those roots is alive 5 s later. The
    content cap is lifted, so a bomb keeps its worker busy inside MuPDF for
    longer than that."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1", "PILAR_HOME": str(home),
           "PILAR_PDF_MAX_PAGE_CONTENT_BYTES": str(2**40)}
    proc = subprocess.Popen([sys.executable, "-m", "pilar", *args], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    main = psutil.Process(proc.pid)
    try:
        while len(workers := parse_workers(roots(main))) < 2:  # mid-run: two parsing
            assert proc.poll() is None, "the ingest ended before it could be killed"
            time.sleep(0.1)
        time.sleep(1)  # inside the bombs' content streams
        helpers = [p for r in roots(main) for p in r.children(recursive=True)]
        assert set(workers) <= set(helpers)
        left = kill_and_wait(main, helpers)  # the bound: 5 s, polled
        assert left == [], [" ".join(p.cmdline()) for p in left]
    finally:
        if proc.poll() is None:
            proc.kill()


def _bombs_then_corpus(made_hostile, shared_data) -> list[str]:
    return [str(made_hostile / "content-bomb-1g.pdf"), str(made_hostile / "content-bomb-64m.pdf"),
            str(shared_data / "pdf" / "wiki")]


@pytest.mark.timeout(600)
def test_workers_die_when_the_ingest_process_is_killed(made_hostile, shared_data, tmp_path):
    # forkserver, resource tracker and the workers are all below the main process
    _kill_mid_run(["ingest", *_bombs_then_corpus(made_hostile, shared_data), "--workers", "2"],
                  tmp_path / "home", lambda main: [main])


@pytest.mark.timeout(600)
def test_workers_die_when_a_ray_driver_is_killed(local_ray, made_hostile, shared_data,
                                                 tmp_path):
    def ray_workers(main):  # the Ray worker processes running this driver's tasks
        return [p for p in psutil.process_iter() if p.name().startswith("ray::parse_and_embed")]

    _kill_mid_run(["ingest", *_bombs_then_corpus(made_hostile, shared_data), "--ray", local_ray],
                  tmp_path / "home", ray_workers)


def test_a_script_without_a_main_guard_gets_one_clear_error(tmp_path):
    script = tmp_path / "unguarded.py"
    script.write_text("from pilar import Pilar\n"
                      f"Pilar(home={str(tmp_path / 'home')!r}).ingest([{str(GOOD_HTML)!r}], "
                      "workers=1)\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1"}
    proc = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1] == (
        "pilar.errors.ConfigError: parse worker processes could not start (a script that "
        'calls Pilar.ingest needs an `if __name__ == "__main__":` guard: each worker imports '
        "the script's module)")
