"""Finding parse workers below a process and waiting for processes to end
(psutil), for the tests that SIGKILL a pilar process mid-run."""

from __future__ import annotations

import time

import psutil


def alive(procs: list[psutil.Process]) -> list[psutil.Process]:
    """Those of ``procs`` still running (a zombie has ended)."""
    out = []
    for proc in procs:
        try:
            if proc.status() != psutil.STATUS_ZOMBIE:
                out.append(proc)
        except psutil.NoSuchProcess:
            pass
    return out


def parse_workers(roots: list[psutil.Process]) -> list[psutil.Process]:
    """The parse workers below ``roots``: processes forked by a forkserver."""
    out = []
    for root in roots:
        for proc in root.children(recursive=True):
            try:
                if "multiprocessing.forkserver" in " ".join(psutil.Process(proc.ppid()).cmdline()):
                    out.append(proc)
            except psutil.NoSuchProcess:
                pass
    return out


def kill_and_wait(main: psutil.Process, below: list[psutil.Process], seconds: float = 5
                  ) -> list[psutil.Process]:
    """SIGKILL ``main``, then poll for up to ``seconds`` until none of
    ``below`` runs; those still running then."""
    main.kill()
    main.wait(30)
    deadline = time.monotonic() + seconds
    while alive(below) and time.monotonic() < deadline:
        time.sleep(0.1)
    return alive(below)
