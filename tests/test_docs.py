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


def test_main_options_have_help():
    assert [p.name for p in CLI.params if not p.help] == []
    assert "version" in [p.name for p in CLI.params]
