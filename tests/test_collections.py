"""Collection names are checked in one place (pilar.model.check_collection)
and every local face refuses a bad one with one clear error naming the field
and the name (control and format characters escaped): the CLI, the Python
API, the API key and ingest root settings. The served faces (REST, MCP) are
checked in tests/api (test_tenancy.py, test_mcp.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pilar import Pilar
from pilar.api.auth import parse_keys
from pilar.api.paths import parse_roots
from pilar.errors import ConfigError
from pilar.model import check_collection
from tests.conftest import FIXTURES
from tests.test_cli import pilar

BAD = ["a\x01b", "team-a\u200b", "", " default", "x" * 65, "-a", "a/b", "a:b", "a+b", "é"]
KANPUR = FIXTURES / "corpus" / "204-541.html"


@pytest.mark.parametrize("name", ["default", "team-a", "Legal.2027_v2", "a" * 64, "7"])
def test_good_names_pass(name):
    assert check_collection(name) == name


@pytest.mark.parametrize("bad", BAD)
def test_python_api_refuses_a_bad_name_before_touching_the_store(tmp_path: Path, bad):
    p = Pilar(home=tmp_path)
    for call in (lambda: p.ingest([KANPUR], collection=bad),
                 lambda: p.ingest_file(KANPUR, bad),
                 lambda: p.search("kanpur", collections=[bad]),
                 lambda: p.docs(collections=[bad]),
                 lambda: p.entities("kanpur", collections=[bad])):
        with pytest.raises(ValueError, match="collection") as err:
            call()
        assert repr(bad) in str(err.value)
    assert p.stats()["documents"] == 0


@pytest.mark.parametrize("bad", ["a\x01b", "team-a\u200b", ""])
@pytest.mark.parametrize("command", [["ingest", str(KANPUR)], ["search", "kanpur"], ["docs"]],
                         ids=["ingest", "search", "docs"])
def test_cli_refuses_a_bad_name_with_one_error_line(tmp_path: Path, bad, command):
    r = pilar(*command, "--collection", bad, "--home", str(tmp_path / "home"), cwd=tmp_path)
    assert r.code == 2, r.stderr
    assert r.stderr.splitlines() == [
        f"error: --collection {bad!r} {'is empty' if not bad else 'is not a collection name'}: "
        "a collection name is 1-64 letters, digits, '.', '_' or '-', starting with a letter "
        "or digit"]
    assert not (tmp_path / "home").exists()


# the settings' own separators (',' between entries, '+' between names,
# ':' after a key and between roots) and the spaces around entries aside
@pytest.mark.parametrize("bad", [b for b in BAD if b == b.strip() and not set(b) & set(",+:")
                                 and b])
def test_key_and_root_settings_refuse_a_bad_name(bad):
    with pytest.raises(ConfigError, match=r"PILAR_API_KEYS entry 2: collection ") as err:
        parse_keys(f"k1,k2:team-a+{bad}")
    assert repr(bad) in str(err.value) and "k2" not in str(err.value)  # never the key itself
    with pytest.raises(ConfigError, match=r"PILAR_INGEST_ROOTS entry 1 ") as err:
        parse_roots(f"{bad}=/srv/x")
    assert repr(bad) in str(err.value)


def test_an_empty_name_in_the_settings_is_refused_too():
    for text in ("k:", "k:a+", "k: "):
        with pytest.raises(ConfigError, match="PILAR_API_KEYS entry 1"):
            parse_keys(text)
    with pytest.raises(ConfigError, match="PILAR_INGEST_ROOTS entry 1 .*is empty"):
        parse_roots("=/srv/x")
