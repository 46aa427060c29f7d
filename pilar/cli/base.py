"""What every ``pilar`` command shares: the Typer app, the consoles, the
common options, and the one place pilar's errors become an ``error:`` line
and an exit code (:func:`reported`): 0 done; 1 the command ran but failed (a
file failed, no store, an empty store, a store that cannot be reached); 2 bad
arguments or settings (the line names the setting or option).

The command modules (:mod:`pilar.cli.store`, :mod:`pilar.cli.query`,
:mod:`pilar.cli.eval`, :mod:`pilar.cli.serve`) import this one; nothing here
imports them (:mod:`pilar.cli` gathers them).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, NoReturn, Optional

import typer
from rich.console import Console
from rich.markup import escape

from pilar.config import MIN_BUDGET, PROFILES, Settings

app = typer.Typer(help="pilar: page-grounded evidence for document question answering.",
                  no_args_is_help=True, add_completion=False, rich_markup_mode=None)
out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)  # one line per message, also in logs

HomeOpt = Annotated[Optional[Path], typer.Option(
    "--home", metavar="DIR", help="store folder (default: PILAR_HOME, else ~/.local/share/pilar)")]
CollectionsOpt = Annotated[Optional[list[str]], typer.Option(
    "--collection", metavar="NAME", help="only documents of this collection (repeat for several)")]
DocsOpt = Annotated[Optional[list[str]], typer.Option(
    "--doc", metavar="DOC_ID", help="only this document id (repeat for several)")]
ECHO_CHARS = 80
"""Characters of a question echoed in the search header."""


def _default(name: str):
    """The built-in default of setting ``name`` (for help texts)."""
    return Settings.model_fields[name].default


BudgetOpt = Annotated[Optional[int], typer.Option(
    metavar="TOKENS", help=f"packet token budget, {MIN_BUDGET} to PILAR_MAX_BUDGET "
                           f"({_default('max_budget')}) [default: PILAR_BUDGET or "
                           f"{_default('budget')}]")]
KOpt = Annotated[Optional[int], typer.Option(
    "--k", metavar="N", help=f"pages to rank, 1 to PILAR_MAX_K ({_default('max_k')}) "
                             f"[default: PILAR_TOP_K or {_default('top_k')}]")]
ProfileOpt = Annotated[Optional[str], typer.Option(
    metavar="PROFILE", help=f"{' or '.join(PROFILES)} [default: PILAR_PROFILE or "
                            f"{_default('profile')}]")]


def fail(message: str, code: int = 1) -> NoReturn:
    """Print ``error: message`` (one line) on stderr and exit with ``code``."""
    err.print(f"[red]error:[/] {escape(message)}")
    raise typer.Exit(code)


@contextmanager
def reported() -> Iterator[None]:
    """Turn pilar's errors into one ``error:`` line each and the exit code:
    a bad setting (pydantic's validation, :class:`ConfigError`) exits 2,
    any other :class:`PilarError` (no store, an empty store, a store that
    cannot be opened) exits 1, Ctrl-C exits 130."""
    from pydantic import ValidationError

    from pilar.errors import ConfigError, PilarError

    try:
        yield
    except ValidationError as exc:  # a bad PILAR_* setting in the environment or .env
        for e in exc.errors():
            name = "PILAR_" + "_".join(str(x) for x in e["loc"]).upper()
            err.print(f"[red]error:[/] {name}={escape(repr(e.get('input')))}: {escape(e['msg'])}")
        raise typer.Exit(2) from None
    except ConfigError as exc:
        fail(str(exc), 2)
    except PilarError as exc:
        fail(str(exc), 1)
    except KeyboardInterrupt:  # Ctrl-C: documents written so far stay, whole
        fail("interrupted", 130)


def command(*args, **kwargs):
    """``app.command(...)`` whose body runs under :func:`reported`."""
    def register(fn):
        @functools.wraps(fn)
        def run(*a, **kw):
            with reported():
                return fn(*a, **kw)
        return app.command(*args, **kwargs)(run)
    return register


def _collections(names: list[str] | None, option: str = "--collection") -> None:
    """End the command (exit 2, one ``error:`` line naming ``option``) unless
    every one of ``names`` is a collection name (:func:`pilar.model.check_collection`)."""
    from pilar.model import check_collection

    for name in names or ():
        try:
            check_collection(name, option)
        except ValueError as exc:
            fail(str(exc), 2)


def _open(home: Path | None, create: bool = True):
    """A :class:`Pilar` on ``home``; raises pilar's errors (see :func:`reported`)."""
    from pilar import Pilar

    return Pilar(home=home, create=create)


def _pilar(home: Path | None, create: bool = True):
    """A :class:`Pilar` on ``home``; a bad setting or a missing store (when
    ``create`` is False) ends the command with one ``error:`` line."""
    with reported():
        return _open(home, create)


def _version(value: bool) -> None:
    if value:
        from pilar import __version__

        out.print(f"pilar {__version__}")
        raise typer.Exit()


@app.callback()
def main_options(version: Annotated[bool, typer.Option(
        "--version", callback=_version, is_eager=True,
        help="print the version and exit")] = False) -> None:
    """pilar: page-grounded evidence for document question answering."""


def clip(text: str, limit: int = ECHO_CHARS) -> str:
    """``text`` on one line, cut to ``limit`` characters with a note of the
    rest; a control or format character is shown escaped (``\\x1b``), never
    sent to the terminal."""
    flat = "".join(c if c.isprintable() else repr(c)[1:-1] for c in " ".join(text.split()))
    if len(flat) <= limit:
        return flat
    return f"{flat[:limit]}... ({len(flat):,} characters)"


