"""docker-compose.yml against the Compose Specification's JSON schema (the
copy vendored, with its licence, in the check-jsonschema package)."""

from __future__ import annotations

import json
from importlib import resources

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
