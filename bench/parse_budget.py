"""A content bomb uploaded to a real ``pilar serve`` by a limited key: how
long its job takes to fail, whether the server answers searches meanwhile,
and the peak resident size of the server's process tree.

    python bench/parse_budget.py [--uncapped] [--memory BYTES] [--json OUT]

Starts ``pilar serve`` (``PILAR_API_KEYS="admin,team-a-key:team-a"``, no
rate limit: one client searches without pause) on a fresh ``PILAR_HOME``, uploads one small HTML page as team-a and searches it
once (the embedding model is loaded: the "model" part of the tree), then
uploads the 3.5 MB PDF of ``tests/fixtures/hostile/make.py`` whose one
content stream inflates to 1 GiB, as team-a, while one client searches
without pause and the tree (the server and every process below it:
forkserver, parse worker) is sampled every 50 ms with ``psutil``: RSS
summed, PSS summed (shared pages split among their sharers, also with
other processes on the machine, so it moves with them), the server
process's own RSS and the parse worker's. The workers start from the
forkserver: no page of the model is counted twice; a worker's pages shared
with the forkserver are (about 120 MB). With default settings the page's content cap refuses the bomb; with
``--uncapped`` the cap is lifted and the parse worker's memory budget
(``--memory``, default the 1 GiB of ``PILAR_PARSE_MEMORY_BYTES``) is what
stops it. The bound to compare with: the tree's RSS before the upload
(server with its model, forkserver) plus the budget plus a worker's start
(one parse worker: the server parses one upload at a time; the worker's
resident size grows by at most the budget).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fixtures.hostile.make import cached  # noqa: E402
from tests.serving import ApiServer, wait_job  # noqa: E402
from results import emit  # noqa: E402

TEAM_A = "team-a-key"
QUERY = {"query": "what is the tallest building in kanpur?", "budget_tokens": 256}


def tree_memory(pid: int) -> tuple[int, int, int, int, int]:
    """Of the process ``pid`` and all below it: (bytes resident summed, PSS
    summed (each shared page split among its sharers), bytes resident in
    ``pid`` itself, the most resident in one parse worker (a process
    forked by the forkserver), processes)."""
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0, 0, 0, 0, 0
    rss = pss = own = worker = 0
    for p in procs:
        try:
            info = p.memory_full_info()
            below = p.ppid() not in (pid, root.ppid())
        except psutil.NoSuchProcess:
            continue
        rss, pss = rss + info.rss, pss + info.pss
        own = info.rss if p.pid == pid else own
        worker = max(worker, info.rss) if below else worker
    return rss, pss, own, worker, len(procs)


def run(uncapped: bool, memory: int | None) -> dict:
    home = Path(tempfile.mkdtemp(prefix="pilar-parse-budget-"))
    env = {"PILAR_API_KEYS": f"admin,{TEAM_A}:team-a", "PILAR_API_RATE_LIMIT": ""}
    if uncapped:
        env["PILAR_PDF_MAX_PAGE_CONTENT_BYTES"] = str(2**40)
    if memory:
        env["PILAR_PARSE_MEMORY_BYTES"] = str(memory)
    bomb = cached(["content-bomb-1g.pdf"]) / "content-bomb-1g.pdf"
    server = ApiServer(home, env).start()
    try:
        team_a = server.client(TEAM_A)
        page = ROOT / "tests" / "fixtures" / "corpus" / "204-541.html"
        r = team_a.post("/v1/documents", files=[("files", (page.name, page.read_bytes()))],
                        data={"collection": "team-a"})
        wait_job(team_a, r.json()["job_id"])
        assert team_a.post("/v1/search", json=QUERY).status_code == 200
        before = tree_memory(server.proc.pid)
        samples: list[tuple[int, int, int, int, int]] = []
        searches: list[tuple[float, int]] = []
        stop = threading.Event()

        def sample() -> None:
            while not stop.is_set():
                samples.append(tree_memory(server.proc.pid))
                time.sleep(0.05)

        def search() -> None:
            with server.client(TEAM_A) as c:
                while not stop.is_set():
                    t = time.monotonic()
                    try:
                        code = c.post("/v1/search", json=QUERY).status_code
                    except Exception:  # noqa: BLE001 - a refused connection is the figure
                        code = 0
                    searches.append((time.monotonic() - t, code))

        threads = [threading.Thread(target=sample), threading.Thread(target=search)]
        for t in threads:
            t.start()
        t0 = time.monotonic()
        r = team_a.post("/v1/documents", files=[("files", (bomb.name, bomb.read_bytes()))],
                        data={"collection": "team-a"})
        job = wait_job(team_a, r.json()["job_id"])
        seconds = time.monotonic() - t0
        stop.set()
        for t in threads:
            t.join(120)
        latencies = sorted(s for s, _ in searches)
        budget = memory or 1024**3
        mb = 2**20
        return {
            "setting": "uncapped (memory budget)" if uncapped else "default caps",
            "bomb_bytes": bomb.stat().st_size,
            "job_state": job["state"], "file_status": job["files"][0]["status"],
            "reason": job["files"][0]["reason"],
            "job_seconds": round(seconds, 1),
            "searches": len(searches), "searches_ok": sum(c == 200 for _, c in searches),
            "search_p50_ms": round(1000 * latencies[len(latencies) // 2]) if latencies else None,
            "search_max_ms": round(1000 * latencies[-1]) if latencies else None,
            "samples": len(samples),
            "tree_rss_before_mb": round(before[0] / mb),
            "tree_rss_peak_mb": round(max(s[0] for s in samples) / mb),
            "tree_pss_before_mb": round(before[1] / mb),
            "tree_pss_peak_mb": round(max(s[1] for s in samples) / mb),
            "server_rss_before_mb": round(before[2] / mb),
            "server_rss_peak_mb": round(max(s[2] for s in samples) / mb),
            "worker_rss_peak_mb": round(max(s[3] for s in samples) / mb),
            "tree_processes_max": max(s[4] for s in samples),
            "budget_mb": round(budget / mb),
            "bound_rss_mb": round((before[0] + budget) / mb),
            "server_alive": server.proc.poll() is None,
        }
    finally:
        server.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--uncapped", action="store_true",
                    help="lift the content cap: the memory budget stops the bomb")
    ap.add_argument("--memory", type=int, help="PILAR_PARSE_MEMORY_BYTES for the server")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    fig = run(args.uncapped, args.memory)
    emit(fig, args.json)


if __name__ == "__main__":
    main()
