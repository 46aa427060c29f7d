"""docker-compose.yml against the Compose Specification's JSON schema (the
copy vendored, with its licence, in the check-jsonschema package), and
private by default: no backend published beyond loopback, the proxy the only
port on every interface, no literal secret, LOAD CSV closed in Neo4j. Two api
replicas behind the proxy (deploy/nginx.conf, parsed with nginx's own
crossplane parser) and a worker service, sharing nothing but the stores and
the uploads volume."""

from __future__ import annotations

import json
import re
from importlib import resources

import crossplane
import jsonschema
import yaml

from tests.conftest import ROOT


def _compose_schema() -> dict:
    vendor = resources.files("check_jsonschema.builtin_schemas.vendor")
    return json.loads((vendor / "compose-spec.json").read_text(encoding="utf-8"))


def test_compose_file_matches_the_compose_spec():
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text(encoding="utf-8"))
    jsonschema.validate(compose, _compose_schema())


def test_schema_rejects_a_broken_service():
    broken = {"services": {"api": {"image": "x", "ports": {"not": "a list"}}}}
    schema = _compose_schema()
    errors = list(jsonschema.validators.validator_for(schema)(schema).iter_errors(broken))
    assert errors


def test_api_service_is_wired_to_the_stack_with_healthchecks():
    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    api = services["api"]
    assert set(api["depends_on"]) == {"neo4j", "elasticsearch", "vllm"}
    assert api["depends_on"]["vllm"]["required"] is False
    assert services["vllm"]["profiles"] == ["gpu"]
    assert api["environment"]["NEO4J_URI"] == "bolt://neo4j:7687"
    assert api["environment"]["ELASTICSEARCH_URL"] == "http://elasticsearch:9200"
    for name in ("api", "neo4j", "elasticsearch", "vllm"):
        assert services[name]["healthcheck"]["test"], name


SECRET = re.compile(r"PASSWORD|AUTH|SECRET|API_KEY|_KEYS$")
"""Environment names that carry a secret."""
REQUIRED = re.compile(r"^(?:neo4j/)?\$\{[A-Z0-9_]+:\?[^}]+\}$")
"""A secret's only allowed form: compose's required interpolation, no default
(``${NEO4J_PASSWORD:?message}``; Neo4j's NEO4J_AUTH as ``neo4j/${...}``)."""
LOOPBACK = {"127.0.0.1", "::1", "[::1]", "localhost"}


def _services() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text(encoding="utf-8"))["services"]


def _environment(service: dict) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):  # ["NAME=value", ...]
        env = dict(e.partition("=")[::2] for e in env)
    return {k: "" if v is None else str(v) for k, v in env.items()}


def _published(entry) -> tuple[str, str] | None:
    """``(host address, host port)`` of one ``ports`` entry (short or long
    syntax); the address is ``*`` when the port is published on every
    interface; None when only the container port is given (compose then
    publishes it on a random host port, on every interface: also ``*``)."""
    if isinstance(entry, dict):
        return entry.get("host_ip") or "*", str(entry.get("published", ""))
    parts = str(entry).rsplit(":", 2)
    if len(parts) == 3:
        return parts[0], parts[1]
    if len(parts) == 2:
        return "*", parts[0]
    return "*", ""


def test_only_the_api_is_published_beyond_loopback():
    published = {name: [_published(p) for p in s.get("ports", [])] for name, s in _services().items()}
    everywhere = {name for name, ports in published.items() if any(a not in LOOPBACK for a, _ in ports)}
    assert everywhere == {"proxy"}, published
    assert published["proxy"] == [("*", "8080")]
    assert published["api"] == published["worker"] == []  # reached through the proxy only
    assert published.get("elasticsearch", []) == []  # security off: the compose network only
    assert published["neo4j"] == [("127.0.0.1", "7687"), ("127.0.0.1", "7474")]


def test_no_literal_secret_anywhere():
    for name, service in _services().items():
        for key, value in _environment(service).items():
            if SECRET.search(key) and value:
                assert REQUIRED.match(value), f"{name}: {key}={value!r} is not ${{VAR:?...}}"
        health = service.get("healthcheck", {}).get("test", [])
        words = " ".join(health).split() if isinstance(health, list) else str(health).split()
        for flag, value in zip(words, words[1:]):
            if flag in ("-p", "--password"):  # cypher-shell; curl's -u user:password
                secret = value
            elif flag in ("-u", "--user") and ":" in value:
                secret = value.partition(":")[2]
            else:
                continue
            assert secret.strip("\"'").startswith("$$"), f"{name}: healthcheck {flag} {value}"
    neo4j, api = _services()["neo4j"], _services()["api"]
    assert _environment(neo4j)["NEO4J_AUTH"].startswith("neo4j/${NEO4J_PASSWORD:?")
    assert _environment(api)["NEO4J_PASSWORD"].startswith("${NEO4J_PASSWORD:?")
    assert _environment(api)["PILAR_API_KEYS"].startswith("${PILAR_API_KEYS:?")
    assert _environment(api)["PILAR_API_ALLOWED_HOSTS"] == "${PILAR_API_ALLOWED_HOSTS:-}"


def test_secret_check_catches_literals():
    assert not REQUIRED.match("neo4j/pilar-secret")
    assert not REQUIRED.match("${NEO4J_PASSWORD:-pilar-secret}")
    assert REQUIRED.match("${NEO4J_PASSWORD:?set it}")
    assert _published("7687:7687") == ("*", "7687")
    assert _published("127.0.0.1:7687:7687") == ("127.0.0.1", "7687")
    assert _published({"target": 9200, "published": 9200}) == ("*", "9200")


def test_neo4j_closes_load_csv_as_the_test_server_does():
    env = _environment(_services()["neo4j"])
    assert env["NEO4J_dbms_security_allow__csv__import__from__file__urls"] == "false"
    assert env["NEO4J_internal_dbms_cypher__ip__blocklist"] == "0.0.0.0/0,::/0"
    assert env["NEO4J_server_directories_import"] == "/var/lib/neo4j/import"
    launcher = (ROOT / "tests/servers/neo4j/src/main/java/pilar/testservers/Neo4jLauncher.java"
                ).read_text(encoding="utf-8")
    for setting in ("GraphDatabaseSettings.allow_file_urls, false",
                    "GraphDatabaseSettings.load_csv_file_url_root",
                    'GraphDatabaseInternalSettings.cypher_ip_blocklist'):
        assert setting in launcher


def _directives(block: list[dict], name: str) -> list[dict]:
    """The directives called ``name`` in a crossplane ``block``, at any depth."""
    out = []
    for d in block:
        if d["directive"] == name:
            out.append(d)
        out += _directives(d.get("block", []), name)
    return out


def test_two_api_replicas_behind_the_proxy():
    services = _services()
    proxy, api, worker = services["proxy"], services["api"], services["worker"]
    assert proxy["image"].startswith("nginx:")
    assert api["deploy"]["replicas"] == 2 and worker["deploy"]["replicas"] == 1
    (mount,) = proxy["volumes"]
    source, target, mode = mount.split(":")
    assert (target, mode) == ("/etc/nginx/nginx.conf", "ro")
    parsed = crossplane.parse(str(ROOT / source), combine=True)
    assert parsed["status"] == "ok", parsed["errors"]
    config = parsed["config"][0]["parsed"]
    (upstream,) = _directives(config, "upstream")
    (server,) = _directives(upstream["block"], "server")
    port = api["command"][api["command"].index("--port") + 1]
    assert server["args"] == [f"api:{port}", "resolve"]  # every replica, re-resolved
    assert api["expose"] == [port]
    (listen,) = _directives(config, "listen")
    assert proxy["ports"] == [f"8080:{listen['args'][0]}"]
    (proxied,) = _directives(config, "proxy_pass")
    assert proxied["args"] == [f"http://{upstream['args'][0]}"]
    # server-sent events pass as they come; uploads as large as the api takes
    assert _directives(config, "proxy_buffering")[0]["args"] == ["off"]
    assert _directives(config, "proxy_request_buffering")[0]["args"] == ["off"]
    body = _directives(config, "client_max_body_size")[0]["args"][0]
    assert body.endswith("m") and int(body[:-1]) * 2**20 >= 2**30  # PILAR_API_MAX_UPLOAD_BYTES
    host = _directives(config, "proxy_set_header")
    assert ["Host", "$http_host"] in [d["args"] for d in host]  # /mcp checks the Host


def test_replicas_and_workers_share_only_the_stores_and_the_uploads():
    services = _services()
    api, worker = _environment(services["api"]), _environment(services["worker"])
    for env in (api, worker):
        assert env["PILAR_GRAPH"] == "neo4j"  # job records are Job nodes there
        assert env["PILAR_UPLOAD_DIR"] == "/uploads"
    assert api["PILAR_API_INGEST_WORKER"] == "false"  # ingest runs in the worker service
    assert worker["PILAR_RAY_ADDRESS"] == "${PILAR_RAY_ADDRESS:-}"
    named = set(yaml.safe_load((ROOT / "docker-compose.yml").read_text())["volumes"])
    for name in ("api", "worker"):
        volumes = [v.split(":")[0] for v in services[name]["volumes"]]
        assert [v for v in volumes if v in named] == ["uploads"], name  # no shared home
    assert "/data" not in " ".join(services["api"]["volumes"] + services["worker"]["volumes"])
