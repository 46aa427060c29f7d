"""Every CLI command and option has help text and every command appears in
the README (after sqlite-utils' tests/test_docs.py)."""

from __future__ import annotations

import re

import pytest
import typer

from pilar.cli import app
from tests.conftest import ROOT

CLI = typer.main.get_command(app)
COMMANDS = sorted(CLI.commands.items())
README = (ROOT / "README.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("name, command", COMMANDS, ids=[n for n, _ in COMMANDS])
def test_commands_have_help(name, command):
    assert command.help, f"pilar {name} is missing its help"


@pytest.mark.parametrize("name, command", COMMANDS, ids=[n for n, _ in COMMANDS])
def test_options_and_arguments_have_help(name, command):
    missing = [p.name for p in command.params if not getattr(p, "help", None)]
    assert not missing, f"pilar {name}: no help for {', '.join(missing)}"


@pytest.mark.parametrize("name", [n for n, _ in COMMANDS])
def test_commands_are_in_the_readme(name):
    assert re.search(rf"\bpilar {name}\b", README), f"pilar {name} is not in README.md"


@pytest.mark.parametrize("name, command", COMMANDS, ids=[n for n, _ in COMMANDS])
def test_options_taking_a_value_name_it(name, command):
    """``--budget TOKENS``, not a Python type (``<int>``, ``<list[str]>``)."""
    unnamed = [p.name for p in command.params if p.param_type_name == "option"
               and not p.is_flag and not (p.metavar and p.metavar.isupper())]
    assert [p for p in command.params if p.param_type_name == "option"], "no options seen"
    assert not unnamed, f"pilar {name}: no metavar for {', '.join(unnamed)}"


@pytest.mark.parametrize("name", ["search", "ask", "eval"])
def test_budget_and_k_help_give_defaults_and_limits(name):
    params = {p.name: p for p in CLI.commands[name].params}
    assert "32 to PILAR_MAX_BUDGET (32768) [default: PILAR_BUDGET or 4500]" \
        in params["budget"].help
    assert "1 to PILAR_MAX_K (100) [default: PILAR_TOP_K or 10]" in params["k"].help


def test_main_options_have_help():
    assert [p.name for p in CLI.params if not p.help] == []
    assert "version" in [p.name for p in CLI.params]


def test_every_setting_has_a_description_and_the_readme_table_is_current():
    """`pilar config --markdown` (from Settings, the one source) is the
    README's "All settings" table; every setting says what it is."""
    from typer.testing import CliRunner

    from pilar.cli.settings import settings_rows

    assert [env for env, _, text in settings_rows() if not text] == []
    printed = CliRunner().invoke(app, ["config", "--markdown"])
    assert printed.exit_code == 0, printed.output
    block = README.split("<!-- settings: begin (pilar config --markdown) -->\n")[1]
    assert block.split("\n<!-- settings: end -->")[0] == printed.stdout.rstrip("\n")
    assert "| `PILAR_MAX_BUDGET` | `32768` |" in block
