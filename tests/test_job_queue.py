"""The job store as a queue (pilar.api.jobs.JobStore on a real SQLite file):
round-robin between owners, a caller's jobs oldest first, cancels of queued
and running jobs, listing by owner and state, leases (a job whose worker
stopped renewing is resumed by another, and the first may write no more)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from pilar.api.jobs import CANCELLED, JobStore, LeaseLost, new_job


def _queue(store: JobStore, owner: str, name: str) -> str:
    job = new_job("default", files=[name])
    store.create(job, owner, [Path("/srv") / name])
    return job.job_id


def test_claims_go_round_robin_between_owners_and_oldest_first(tmp_path):
    store = JobStore(tmp_path / "jobs.sqlite")
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
    store.close()


def test_cancel_a_queued_job_ends_it_and_a_running_one_asks_its_worker(tmp_path):
    store = JobStore(tmp_path / "jobs.sqlite")
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
    store.close()


def test_a_job_whose_lease_ran_out_is_resumed_by_another_worker(tmp_path):
    first = JobStore(tmp_path / "jobs.sqlite", lease_seconds=2)
    second = JobStore(tmp_path / "jobs.sqlite", lease_seconds=2)
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
    first.close()
    second.close()
