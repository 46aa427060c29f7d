"""A real ``pilar serve`` (uvicorn) on a loopback port, for the API tests and benches."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ApiServer:
    """``pilar serve`` in a child process with ``env`` added to the
    environment, listening on ``host`` (a loopback address), as ``workers``
    server processes (default 1: one process a test can kill whole; None:
    the server's default, one per core); :meth:`start` waits for ``/healthz``."""

    def __init__(self, home: Path, env: dict[str, str] | None = None, log: Path | None = None,
                 host: str = "127.0.0.1", workers: int | None = 1):
        self.home = Path(home)
        self.host = host
        self.workers = workers
        self.port = free_port()
        self.url = f"http://{host}:{self.port}"
        self.env = {**os.environ, "PILAR_HOME": str(self.home), "PYTHONPATH": str(ROOT),
                    "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", **(env or {})}
        self.log = log or self.home / "server.log"
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 180.0) -> "ApiServer":
        self.home.mkdir(parents=True, exist_ok=True)
        out = self.log.open("ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "pilar", "serve", "--host", self.host, "--port", str(self.port),
             *(["--workers", str(self.workers)] if self.workers else [])],
            env=self.env,
            stdout=out, stderr=subprocess.STDOUT, cwd=self.home)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"pilar serve exited: {self.log.read_text()[-2000:]}")
            try:
                if httpx.get(self.url + "/healthz", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        raise RuntimeError(f"pilar serve did not answer /healthz: {self.log.read_text()[-2000:]}")

    def stop(self, kill: bool = False) -> None:
        """SIGTERM (graceful) or SIGKILL (a crash), then wait."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)

    def client(self, key: str | None = None, **kw) -> httpx.Client:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=kw.pop("timeout", 300),
                            **kw)


def wait_job(client: httpx.Client, job_id: str, timeout: float = 600) -> dict:
    """The job's record once it has ended: done, failed or cancelled
    (polling ``GET /v1/jobs/{id}``)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = client.get(f"/v1/jobs/{job_id}").json()
        if job["state"] in ("done", "failed", "cancelled"):
            return job
        time.sleep(0.3)
    raise TimeoutError(f"job {job_id} still {job['state']}")
