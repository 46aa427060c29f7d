"""Claim, renew and update latency of the two job stores
(:mod:`pilar.api.job_store_sqlite`, :mod:`pilar.api.job_store_neo4j`), taking
turns in one run: ``--n`` rounds, each queueing one job in both stores, then
claiming it, renewing its lease and recording one file's outcome in each
(SQLite first, then Neo4j, then the other way round). Reported per store
and operation: p50 / p95 milliseconds.

    NEO4J_URI=bolt://... python bench/job_store.py [--n 200] [--json OUT]

The Neo4j store's Job nodes made here are deleted at the end. Its claims
take any queued job of that Neo4j, so it refuses to run while one waits
(a server on the same Neo4j would see its jobs taken).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from pilar.api.job_stores import open_job_store
from pilar.api.jobs import new_job
from pilar.config import Settings


def pct(xs: list[float], q: float) -> float:
    """The ``q`` quantile (0-1) of ``xs`` in milliseconds."""
    return round(statistics.quantiles(xs, n=100)[int(q * 100) - 1] * 1000, 2)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    home = Path(tempfile.mkdtemp(prefix="pilar-bench-jobs-"))
    stores = {"sqlite": open_job_store(Settings(home=home)),
              "neo4j": open_job_store(Settings(
                  home=home, graph="neo4j", neo4j_uri=os.environ["NEO4J_URI"],
                  neo4j_username=os.environ.get("NEO4J_USERNAME"),
                  neo4j_password=os.environ.get("NEO4J_PASSWORD")))}
    if stores["neo4j"].driver.execute_query(
            "MATCH (j:Job) WHERE j.state IN ['queued', 'running', 'cancelling'] "
            "RETURN count(j) AS n").records[0]["n"]:
        raise SystemExit("bench/job_store.py: jobs wait in this Neo4j; run it on one no "
                         "server uses (its claims would take them)")
    times = {name: {"claim": [], "renew": [], "update": []} for name in stores}
    made = []
    for i in range(args.n):
        order = list(stores) if i % 2 == 0 else list(reversed(stores))
        for name in order:
            store = stores[name]
            job = new_job("default", files=["a.html", "b.html"])
            store.create(job, f"owner{i % 3}", [Path("/srv/a.html"), Path("/srv/b.html")])
            made.append(job.job_id)
            t = time.perf_counter()
            claimed = store.claim(None)
            times[name]["claim"].append(time.perf_counter() - t)
            t = time.perf_counter()
            assert store.renew(claimed[0].job_id)
            times[name]["renew"].append(time.perf_counter() - t)
            t = time.perf_counter()
            store.update(claimed[0].job_id, lambda j: j.enter("done"), hold=True)
            times[name]["update"].append(time.perf_counter() - t)
    out = {name: {op: {"p50_ms": pct(xs, 0.5), "p95_ms": pct(xs, 0.95)} for op, xs in ops.items()}
           for name, ops in times.items()}
    out["n"], out["loadavg"] = args.n, os.getloadavg()
    stores["neo4j"].driver.execute_query("MATCH (j:Job) WHERE j.job_id IN $ids DETACH DELETE j",
                                         {"ids": made})
    for store in stores.values():
        store.close()
    print(json.dumps(out, indent=1))
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
