"""Uploads against their limits on a real ``pilar serve`` of this tree: one
file under ``PILAR_MAX_FILE_BYTES`` and one over it, each streamed as one
multipart request (chunked, so only the bytes show the size).

    python bench/upload_limits.py [--limit-mib 200] [--under-mib 100] [--over-mib 300] [--json OUT]

Reports per upload the HTTP status, the seconds to the answer, the MiB left
under ``PILAR_HOME/uploads`` right after it and, for an accepted one, the
file's status and the MiB left once its job ended (an HTML file over
``PILAR_MAX_HTML_BYTES`` fails, and a failed upload's bytes go).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.serving import ApiServer, wait_job  # noqa: E402 - the tree's own launcher

BOUNDARY = "bench-upload-boundary"


def _mib(folder: Path) -> float:
    files = folder.rglob("*") if folder.exists() else []
    return round(sum(p.stat().st_size for p in files if p.is_file()) / 2**20, 1)


def _body(name: str, mib: int):
    """A multipart body of one HTML file of ``mib`` MiB, in 1 MiB chunks."""
    yield (f"--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"collection\"\r\n\r\n"
           f"default\r\n--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"files\"; "
           f"filename=\"{name}\"\r\n\r\n").encode()
    block = b"<p>" + b"x" * (2**20 - 3)
    for _ in range(mib):
        yield block
    yield f"\r\n--{BOUNDARY}--\r\n".encode()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit-mib", type=int, default=200, help="PILAR_MAX_FILE_BYTES in MiB")
    ap.add_argument("--under-mib", type=int, default=100)
    ap.add_argument("--over-mib", type=int, default=300)
    ap.add_argument("--json", type=Path, help="write the figures here")
    args = ap.parse_args()
    home = Path(tempfile.mkdtemp(prefix="bench-upload-"))
    server = ApiServer(home, {"PILAR_API_KEYS": "bench-key",
                              "PILAR_MAX_FILE_BYTES": str(args.limit_mib * 2**20)}).start()
    rows = []
    try:
        with server.client("bench-key", timeout=600) as client:
            for mib in (args.under_mib, args.over_mib):
                t = time.perf_counter()
                r = client.post("/v1/documents", content=_body(f"file-{mib}.html", mib), headers={
                    "content-type": f"multipart/form-data; boundary={BOUNDARY}"})
                row = {"mib": mib, "status": r.status_code,
                       "seconds": round(time.perf_counter() - t, 2),
                       "uploads_mib_after": _mib(home / "uploads")}
                if r.status_code == 202:
                    job = wait_job(client, r.json()["job_id"])
                    row.update(file_status=job["files"][0]["status"],
                               uploads_mib_after_job=_mib(home / "uploads"))
                else:
                    row["detail"] = r.json()["detail"]
                rows.append(row)
                print(json.dumps(row))
    finally:
        server.stop()
    if args.json:
        args.json.write_text(json.dumps({"limit_mib": args.limit_mib, "uploads": rows}, indent=2))


if __name__ == "__main__":
    main()
