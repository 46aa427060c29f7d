"""Which files an ingest takes: the paths a user names (files, folders,
globs) turned into the list of files to parse, and the files in folders
skipped as not documents, each with its reason."""

from __future__ import annotations

import glob
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

NOT_DOCUMENTS = frozenset({".md", ".txt", ".rst", ".json", ".jsonl", ".csv", ".tsv", ".py",
                           ".toml", ".yml", ".yaml", ".cfg", ".ini", ".log"})
"""Suffixes skipped when walking a folder (notes and data beside documents);
files named explicitly are always tried, their type sniffed from content."""


class Selection(NamedTuple):
    """What :func:`select_files` found: ``files`` to ingest, and ``skipped``
    ``(path, reason)`` pairs for files in folders that are not documents."""

    files: list[Path]
    skipped: list[tuple[Path, str]]


def select_files(paths: Iterable[str | Path]) -> Selection:
    """Files named by ``paths``: files as given, folders walked recursively
    (hidden files, :data:`NOT_DOCUMENTS` suffixes and broken symbolic links
    skipped, each with its reason), glob patterns expanded; sorted within
    each argument, duplicates dropped. A path that matches nothing is kept so that ingestion reports
    it as missing."""
    out: list[Path] = []
    skipped: list[tuple[Path, str]] = []
    for p in paths:
        p = Path(p)
        if p.is_dir():
            for f in sorted(f for f in p.rglob("*") if f.is_file() or f.is_symlink()):
                if not f.exists():
                    skipped.append((f, "broken symbolic link"))
                elif not f.is_file():
                    continue  # a link to a folder: not walked
                elif any(part.startswith(".") for part in f.relative_to(p).parts):
                    skipped.append((f, "hidden"))
                elif f.suffix.lower() in NOT_DOCUMENTS:
                    skipped.append((f, f"not a document ({f.suffix.lower()})"))
                else:
                    out.append(f)
        elif p.exists():
            out.append(p)
        elif glob.has_magic(str(p)):
            out.extend(sorted(Path(m) for m in glob.glob(str(p), recursive=True)
                              if Path(m).is_file()))
        else:
            out.append(p)
    files = list(dict.fromkeys(out))
    known = set(files)
    return Selection(files, list(dict.fromkeys((f, r) for f, r in skipped if f not in known)))
