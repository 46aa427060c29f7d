"""Where the versioned schema files live (``migrations/`` in the repository,
``pilar/_migrations`` inside an installed wheel)."""

from __future__ import annotations

import re
from pathlib import Path

from pilar.errors import StoreError

_VERSION = re.compile(r"^(\d{4})_.*")


def migration_files(backend: str, suffix: str) -> list[tuple[int, Path]]:
    """``[(version, path), ...]`` for ``migrations/<backend>/NNNN_*<suffix>``,
    in version order. Raises :class:`StoreError` if the folder is missing."""
    here = Path(__file__).resolve().parent
    for base in (here / "_migrations", here.parent / "migrations"):
        folder = base / backend
        if folder.is_dir():
            found = []
            for path in folder.glob(f"*{suffix}"):
                m = _VERSION.match(path.name)
                if m:
                    found.append((int(m.group(1)), path))
            return sorted(found)
    raise StoreError(f"migrations for {backend} not found beside {here}")
