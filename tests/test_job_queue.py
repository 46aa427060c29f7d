"""The job store as a queue, on both stores (pilar.api.jobs.JobStore: a real
SQLite file, and Job nodes on the real Neo4j server): round-robin between
owners, a caller's jobs oldest first, cancels of queued and running jobs,
listing by owner and state, leases (a job whose worker stopped renewing is
resumed by another, and the first may write no more), claims by workers
racing in threads (each job held by one)."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from pilar.api.jobs import CANCELLED, JobStore, LeaseLost, new_job
from pilar.config import Settings


@pytest.fixture(params=["sqlite", pytest.param("neo4j", marks=pytest.mark.neo4j)])
def open_store(request, tmp_path):
    """``open_store(lease_seconds=30)``: a fresh handle on one job store (each
    call another worker of the same store); Neo4j's Job nodes deleted before
    and after the test."""
    from pilar.api.job_stores import open_job_store

    opened = []
    if request.param == "neo4j":
        env = {"graph": "neo4j", "neo4j_uri": request.getfixturevalue("neo4j_uri"),
               "neo4j_username": os.environ.get("NEO4J_USERNAME"),
               "neo4j_password": os.environ.get("NEO4J_PASSWORD")}
    else:
        env = {"graph": "sqlite"}

    def open_store(lease_seconds: float = 30.0) -> JobStore:
        store = open_job_store(Settings(home=tmp_path, job_lease_seconds=lease_seconds, **env))
        opened.append(store)
        return store

    def clear() -> None:
        if request.param == "neo4j":
            open_store().driver.execute_query("MATCH (j:Job) DETACH DELETE j")

    clear()
    yield open_store
    clear()
    for store in opened:
        store.close()

def _queue(store: JobStore, owner: str, name: str) -> str:
    job = new_job("default", files=[name])
    store.create(job, owner, [Path("/srv") / name])
    return job.job_id


def test_claims_go_round_robin_between_owners_and_oldest_first(open_store):
    store = open_store()
    a1, a2 = _queue(store, "a", "a1.html"), _queue(store, "a", "a2.html")
    assert store.waiting(besides="a") is False
    b1, c1 = _queue(store, "b", "b1.html"), _queue(store, "c", "c1.html")
    order = []
    after = None
    for _ in range(5):
        job, owner, paths = store.claim(after)
        order.append((owner, job.job_id, job.state, [p.name for p in paths]))
        after = owner
    assert order == [("a", a1, "running", ["a1.html"]), ("b", b1, "running", ["b1.html"]),
                     ("c", c1, "running", ["c1.html"]), ("a", a1, "running", ["a1.html"]),
                     ("b", b1, "running", ["b1.html"])]
    assert store.get(a2).state == "queued"  # behind a's older job
    assert store.waiting(besides="a") is True
    assert [h.state for h in store.get(a1).history] == ["queued", "running"]


def test_cancel_a_queued_job_ends_it_and_a_running_one_asks_its_worker(open_store):
    store = open_store()
    running, queued = _queue(store, "a", "one.html"), _queue(store, "a", "two.html")
    assert store.claim(None)[0].job_id == running
    gone = store.cancel(queued)
    assert gone.state == "cancelled" and [h.state for h in gone.history] == ["queued", "cancelled"]
    assert [(f.status, f.reason) for f in gone.files] == [("cancelled", CANCELLED)]
    assert store.cancel(running).state == "cancelling"
    assert store.state(running) == "cancelling"
    # between two slices the worker takes it up again, to end it
    job, _, _ = store.claim(None)
    assert (job.job_id, job.state) == (running, "cancelling")
    assert store.cancel(queued).state == "cancelled"  # an ended job is left as it is
    assert [j.job_id for j in store.owned("a")] == [queued, running]
    assert [j.job_id for j in store.owned("a", ["cancelled"])] == [queued]
    assert store.owned("b") == []


def test_a_job_whose_lease_ran_out_is_resumed_by_another_worker(open_store):
    first, second = open_store(lease_seconds=2), open_store(lease_seconds=2)
    assert first.holder != second.holder
    job_id = _queue(first, "a", "one.html")
    first.update(first.claim(None)[0].job_id, lambda j: setattr(j.files[0], "status", "running"),
                 hold=True)
    assert second.claim(None) is None  # held: the lease runs
    time.sleep(2.2)  # the first worker died: nobody renews
    job, owner, _ = second.claim(None)
    assert (job.job_id, owner, job.state, job.files[0].status) == (job_id, "a", "running", "queued")
    with pytest.raises(LeaseLost):
        first.update(job_id, lambda j: j.enter("done"), hold=True)
    assert first.renew(job_id) is False and second.renew(job_id) is True
    assert first.claim(None) is None  # the second worker holds it now
    assert second.state(job_id) == "running"


def test_workers_racing_for_jobs_never_hold_one_job_twice(open_store):
    ids = {_queue(open_store(), owner, f"{owner}{i}.html") for owner in "ab" for i in range(6)}
    workers = [open_store() for _ in range(4)]
    held: dict[str, list[str]] = {w.holder: [] for w in workers}
    start = threading.Barrier(len(workers))

    def work(store: JobStore) -> None:
        start.wait()
        while (claimed := store.claim(None)) is not None:
            job = claimed[0]
            held[store.holder].append(job.job_id)
            store.update(job.job_id, lambda j: j.enter("done"), hold=True)

    threads = [threading.Thread(target=work, args=(w,)) for w in workers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    taken = [job_id for jobs in held.values() for job_id in jobs]
    assert sorted(taken) == sorted(ids)  # each job claimed once, by one worker
    assert {j.state for o in "ab" for j in workers[0].owned(o)} == {"done"}
