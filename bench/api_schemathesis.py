"""Schemathesis over the served OpenAPI schema: no 5xx, no response that
breaks its declared schema, status code or content type.

    python bench/api_schemathesis.py [--max-examples 20] [--json OUT]

Starts ``pilar serve`` on loopback on a fresh store holding three small
fixture documents, then runs the ``schemathesis`` CLI (examples, coverage
and fuzzing phases) on every operation with a valid key, with the checks
``not_a_server_error``, ``response_schema_conformance``,
``status_code_conformance`` and ``content_type_conformance``, and reports the
operations, test cases and failures it counted (from its JUnit report).
Bounded by ``--max-examples`` per operation. On the embedded store
``POST /v1/cypher`` answers its documented 501 (Cypher needs Neo4j), a 5xx by
design, so it is left out unless ``--neo4j-uri`` (or NEO4J_URI) puts the
graph on Neo4j; likewise ``POST /v1/answer`` and ``POST /v1/eval`` (with
``reader``) answer their documented 503 without a reader, so they are left
out unless ``PILAR_LLM_BASE_URL`` (or ``PILAR_READER_BASE_URL``) names one. With a
reader, the server makes one attempt per answer with ``PILAR_READER_TIMEOUT``
(default here 300 s) and the client waits 60 s longer.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
KEY = "schemathesis-key"
CHECKS = ("not_a_server_error,response_schema_conformance,status_code_conformance,"
          "content_type_conformance")


def main() -> None:
    from pilar import Pilar
    from tests.serving import ApiServer

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-examples", type=int, default=20)
    ap.add_argument("--neo4j-uri", default=os.environ.get("NEO4J_URI"))
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="api-st-"))
    corpus = ROOT / "tests" / "fixtures" / "corpus"
    graph = {"PILAR_GRAPH": "neo4j", "NEO4J_URI": args.neo4j_uri} if args.neo4j_uri else {}
    os.environ.update(graph)
    p = Pilar(home=tmp / "home")
    for doc in p.docs():  # start from an empty graph
        p.delete(doc.doc_id)
    p.ingest([corpus / "204-541.html", corpus / "204-268.html", ROOT / "tests" / "fixtures" /
              "pdf" / "204-268.pdf"])
    del p
    reader = bool(os.environ.get("PILAR_LLM_BASE_URL") or os.environ.get("PILAR_READER_BASE_URL"))
    # A reader's answer to the longest question at the largest budget can take minutes on a
    # small CPU: one attempt with its own timeout, and the client waits longer than that, so
    # a slow answer is waited for instead of counted as a network error.
    reader_timeout = float(os.environ.get("PILAR_READER_TIMEOUT", "300"))
    slow = {"PILAR_READER_TIMEOUT": str(reader_timeout), "PILAR_LLM_MAX_RETRIES": "0"} if reader else {}
    # no rate limit: the fuzzer sends one key's requests as fast as the server answers
    server = ApiServer(tmp / "home", {"PILAR_API_KEYS": KEY, "PILAR_INGEST_ROOTS": str(corpus),
                                      "PILAR_API_RATE_LIMIT": "", **graph, **slow}).start()
    skip = [] if args.neo4j_uri else ["--exclude-path", "/v1/cypher"]
    if not reader:
        skip += ["--exclude-path", "/v1/answer", "--exclude-path", "/v1/eval"]
    junit = tmp / "junit.xml"
    try:
        run = subprocess.run(
            [sys.executable, "-m", "schemathesis.cli", "run", f"{server.url}/openapi.json",
             "--checks", CHECKS, "--max-examples", str(args.max_examples),
             "--phases", "examples,coverage,fuzzing", "-H", f"X-API-Key: {KEY}",
             "--seed", "7", "--report", "junit", "--report-junit-path", str(junit),
             "--request-timeout", str(int(reader_timeout) + 60 if reader else 120), *skip],
            capture_output=True, text=True, cwd=tmp)
    finally:
        server.stop()
    print(run.stdout[-6000:])
    cases = ET.parse(junit).getroot().iter("testcase") if junit.exists() else []
    ops, failures = 0, []
    for case in cases:
        ops += 1
        for bad in list(case.iter("failure")) + list(case.iter("error")):
            failures.append(f"{case.get('name')}: {(bad.get('message') or '')[:200]}")
    counted = re.search(r"(\d+) generated, (\d+) passed", run.stdout)
    log = server.log.read_text(errors="replace")
    result = {"graph": "neo4j" if args.neo4j_uri else "sqlite", "operations": ops,
              "cases": int(counted.group(1)) if counted else None, "failed_operations": len(failures), "failures": failures,
              "exit_code": run.returncode, "server_tracebacks": log.count("Traceback")}
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
