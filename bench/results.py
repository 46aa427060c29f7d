"""How a benchmark hands over its figures: printed as JSON, and written to
``--json PATH`` when given (the file ``bench/run_all`` reads)."""

from __future__ import annotations

import json
from pathlib import Path


def emit(figures: dict, path: Path | None) -> None:
    """Print ``figures`` as indented JSON and, with ``path``, write them there
    (its folder made when missing)."""
    text = json.dumps(figures, indent=2)
    print(text)
    if path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
