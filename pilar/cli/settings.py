"""``pilar config``: every setting with its environment name, default and
description, from :class:`pilar.config.Settings` (the one source); with
``--markdown`` the table the README's "All settings" section holds (a test
checks it is current)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from pilar.cli.base import app, out
from pilar.config import Settings


def settings_rows() -> list[tuple[str, str, str]]:
    """``(environment name, default, description)`` of every setting, in
    declaration order; a computed default reads ``(computed)``."""
    rows = []
    for name, field in Settings.model_fields.items():
        alias = field.validation_alias
        env = alias.choices[0] if alias is not None else f"PILAR_{name.upper()}"
        if field.default_factory is not None:
            default = "(computed)"
        elif field.default is None:
            default = "unset"
        elif isinstance(field.default, bool):
            default = str(field.default).lower()
        else:
            default = str(field.default)
        rows.append((env, default, field.description or ""))
    return rows


def markdown() -> str:
    """The settings as a Markdown table (``| setting | default | description |``)."""
    lines = ["| setting | default | description |", "|---|---|---|"]
    lines += [f"| `{env}` | `{default}` | {escaped} |" for env, default, text in settings_rows()
              for escaped in [text.replace("|", "\\|")]]
    return "\n".join(lines)


@app.command("config")
def config(as_markdown: Annotated[bool, typer.Option(
        "--markdown", help="print the README's Markdown table")] = False) -> None:
    """Print every setting: its environment name, default and description
    (values come from the environment or .env; none is printed)."""
    if as_markdown:
        out.print(markdown(), markup=False, highlight=False, soft_wrap=True)
        return
    table = Table(title="pilar settings (environment or .env)")
    for col in ("setting", "default", "description"):
        table.add_column(col, overflow="fold")
    for env, default, text in settings_rows():
        table.add_row(env, escape(default), escape(text))
    out.print(table)
