"""Server paths as API callers see them.

``PILAR_INGEST_ROOTS`` lists the server folders that ``POST
/v1/documents/paths`` and ``POST /v1/eval`` may read: entries separated by
commas (or ``os.pathsep``), each ``PATH`` (open to every collection) or
``COLL=PATH`` / ``COLL1+COLL2=PATH`` (open to keys that see one of those
collections; unlimited keys see every root; a path holding ``=`` needs a
``COLL=`` before it). A path is readable by a key
when it lies, symlinks resolved, under a root open to it.

A document's sources are server paths; a client is never shown one
(:meth:`ServerPaths.shown`): an upload is shown by its client's file name,
a file under an ingest root by its path below that root, anything else (a
file ingested with the CLI) by its file name alone.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass
from pathlib import Path

from pilar.api.auth import Access
from pilar.config import Settings
from pilar.errors import ConfigError
from pilar.model import check_collection

SHOWN_CACHE = 4096
"""Source paths whose shown form a server keeps (:meth:`ServerPaths.shown`)."""


class PathRefused(Exception):
    """A server path a caller may not read (``status`` 403) or that does not
    exist (404); ``detail`` names the path as the caller gave it."""

    def __init__(self, status: int, detail: str):
        super().__init__(detail)
        self.status, self.detail = status, detail


@dataclass(frozen=True, slots=True)
class Root:
    """One ingest root: a resolved folder, open to ``collections`` (None:
    every collection)."""

    path: Path
    collections: frozenset[str] | None = None

    def open_to(self, access: Access) -> bool:
        """May a caller of ``access`` read under this root (it is open to
        every collection, the caller is unlimited, or they share one)?"""
        return (self.collections is None or access.collections is None
                or bool(self.collections & access.collections))


def parse_roots(text: str) -> list[Root]:
    """The roots of ``PILAR_INGEST_ROOTS`` (see the module docstring).

    Raises :class:`ConfigError` naming the entry for an empty path or a
    collection name that is not one (:func:`~pilar.model.check_collection`)."""
    roots = []
    entries = re.split(f"[,{re.escape(os.pathsep)}]", text)
    for n, entry in enumerate((e.strip() for e in entries if e.strip()), 1):
        names, sep, path = entry.partition("=")
        collections = None
        if not sep:
            path = names
        else:
            try:
                collections = frozenset(check_collection(c.strip(), "collection")
                                        for c in names.split("+"))
            except ValueError as exc:
                raise ConfigError(f"PILAR_INGEST_ROOTS entry {n} ({entry!r}): {exc}") from None
        if not path.strip():
            raise ConfigError(f"PILAR_INGEST_ROOTS entry {n} ({entry!r}): the path is empty")
        roots.append(Root(Path(path.strip()).expanduser().resolve(), collections))
    return roots


class ServerPaths:
    """The ingest roots and the upload folder of a server (see the module
    docstring)."""

    def __init__(self, roots: list[Root], uploads: Path):
        # innermost first, so a path is shown below the closest root holding it
        self.roots = sorted(roots, key=lambda r: -len(r.path.parts))
        self.uploads = uploads.resolve()
        # a search shows the same few sources hundreds of times (every citation)
        self._shown = functools.lru_cache(maxsize=SHOWN_CACHE)(self._show)

    @classmethod
    def of(cls, settings: Settings) -> "ServerPaths":
        """The server paths of ``settings``; raises :class:`ConfigError` for a
        malformed ``PILAR_INGEST_ROOTS``."""
        return cls(parse_roots(settings.ingest_roots), settings.uploads)

    def readable(self, path: str, access: Access) -> Path:
        """``path`` resolved (symlinks followed) when it lies under a root
        open to ``access``. Raises :class:`PathRefused`: 403 when it does not
        (or no root is open to the key), 404 when it does not exist."""
        if not self.roots:
            raise PathRefused(403, "server-side paths are off: PILAR_INGEST_ROOTS is empty")
        roots = [r.path for r in self.roots if r.open_to(access)]
        if not roots:
            raise PathRefused(403, "no folder of PILAR_INGEST_ROOTS is open to this key's "
                                   "collections")
        resolved = Path(path).expanduser().resolve()
        if not any(resolved.is_relative_to(root) for root in roots):
            raise PathRefused(403, f"{path}: not under the PILAR_INGEST_ROOTS open to this key")
        if not resolved.exists():
            raise PathRefused(404, f"{path}: no such file or folder on the server")
        return resolved

    def shown(self, uri: str) -> str:
        """How a stored source path is shown to a client: an upload's file
        name, a path below the innermost ingest root holding it, else the
        file name (the last :data:`SHOWN_CACHE` answers kept)."""
        return self._shown(uri)

    def _show(self, uri: str) -> str:
        path = Path(uri)
        if not path.is_relative_to(self.uploads):
            for root in self.roots:
                if path.is_relative_to(root.path) and path != root.path:
                    return str(path.relative_to(root.path))
        return path.name
