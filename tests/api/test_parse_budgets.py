"""The server's process never parses: an upload is parsed by the ingest
worker beside the server, in a parse process within the parse budgets, so
the 3.5 MB content bomb (inflating to 1 GiB) uploaded by a limited key
fails its job with one reason while the server answers searches
throughout, and the parse dies with the server (a real ``pilar serve``,
real uploads)."""

from __future__ import annotations

import threading
import time

import psutil
import pytest

from tests.api.shared import CORPUS, KANPUR, upload
from tests.processes import alive, kill_and_wait, parse_workers
from tests.serving import ApiServer, wait_job

TEAM_A = "team-a-key-0123456789"
UNCAPPED = {"PILAR_API_KEYS": f"admin-key-0123456789,{TEAM_A}:team-a",
            "PILAR_PDF_MAX_PAGE_CONTENT_BYTES": str(2**40),
            "PILAR_PARSE_MEMORY_BYTES": str(512 * 1024 * 1024), "PILAR_API_RATE_LIMIT": ""}
"""The content cap out of the way: only the worker's memory budget stops the bomb
(and no rate limit: the test searches without pause)."""


@pytest.mark.timeout(900)
def test_a_bomb_over_the_memory_budget_fails_its_job_and_the_server_answers(
        made_hostile, tmp_path):
    server = ApiServer(tmp_path / "home", UNCAPPED).start()
    try:
        team_a = server.client(TEAM_A)
        good = wait_job(team_a, upload(team_a, [CORPUS / "204-541.html"], "team-a")["job_id"])
        assert good["files"][0]["status"] == "ingested"
        job = upload(team_a, [made_hostile / "content-bomb-1g.pdf"], "team-a")
        answers: list[int] = []
        stop = threading.Event()

        def search() -> None:
            with server.client(TEAM_A) as c:
                while not stop.is_set():
                    answers.append(c.post("/v1/search", json={"query": KANPUR,
                                                              "budget_tokens": 256}).status_code)

        poller = threading.Thread(target=search)
        poller.start()
        try:
            done = wait_job(team_a, job["job_id"])
        finally:
            stop.set()
            poller.join(60)
        assert done["state"] == "failed" and done["counts"] == {"failed": 1}
        (entry,) = done["files"]
        assert entry["status"] == "failed" and entry["doc_id"] is None
        assert entry["reason"] == done["reason"] == ("over the 512 MiB parse memory limit "
                                                     "(PILAR_PARSE_MEMORY_BYTES)")
        assert answers and set(answers) == {200}  # every search during the job answered
        assert server.proc.poll() is None
        # the parse ran below the ingest worker beside the server; no parse
        # process is left, only the worker and its forkserver
        main = psutil.Process(server.proc.pid)
        tree = alive(main.children(recursive=True))
        assert parse_workers([main]) == []
        (worker,) = [p for p in tree if p.ppid() == main.pid]
        assert worker.cmdline()[-3:-1] == ["worker", "--parent"]
        assert all(p.ppid() == worker.pid for p in tree if p != worker)
        assert team_a.get("/v1/documents").json()["total"] == 1
    finally:
        server.stop()


@pytest.mark.timeout(600)
def test_the_parse_worker_dies_with_a_killed_server(made_hostile, tmp_path):
    server = ApiServer(tmp_path / "home", UNCAPPED).start()
    try:
        team_a = server.client(TEAM_A)
        upload(team_a, [made_hostile / "content-bomb-1g.pdf"], "team-a")
        main = psutil.Process(server.proc.pid)
        while not parse_workers([main]):  # the bomb is being parsed (for many seconds)
            assert server.proc.poll() is None
            time.sleep(0.1)
        below = main.children(recursive=True)
        left = kill_and_wait(main, below)  # as an OOM killer would; 5 s, polled
        assert left == [], [" ".join(p.cmdline()) for p in left]
    finally:
        server.stop(kill=True)
