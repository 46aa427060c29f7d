"""The ``pilar`` command line (Typer): ingest, search, ask, docs, delete,
stats, migrate, cypher, eval, serve, worker, mcp, config.

Every command has the same reach as the Python API (:class:`pilar.Pilar`),
takes its question, budget, k, profile and scope as the one request model
(:mod:`pilar.query`) and turns pilar's errors into one ``error:`` line on
stderr with an exit code (:func:`pilar.cli.base.reported`). The commands
live by area (:mod:`~pilar.cli.store`, :mod:`~pilar.cli.query`,
:mod:`~pilar.cli.eval`, :mod:`~pilar.cli.serve`) and register themselves
on one :data:`app`; none imports this module.
"""

from pilar.cli import eval, query, serve, settings, store  # noqa: F401 - they register commands
from pilar.cli.base import app, err, out

__all__ = ["app", "err", "main", "out"]


def main() -> None:
    app()
