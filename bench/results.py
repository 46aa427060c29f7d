"""How a benchmark hands over its figures: printed as JSON, and written to
``--json PATH`` when given (the file ``bench/run_all`` reads)."""

from __future__ import annotations

import json
from pathlib import Path


def write(figures: dict, path: Path | None, indent: int = 2) -> None:
    """With ``path``, write ``figures`` there as indented JSON (its folder made
    when missing); without, nothing."""
    if path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(figures, indent=indent))


def emit(figures: dict, path: Path | None) -> None:
    """Print ``figures`` as indented JSON and, with ``path``, :func:`write` them there."""
    print(json.dumps(figures, indent=2))
    write(figures, path)
