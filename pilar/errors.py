"""Exceptions raised by pilar, in one module (as neo4j-graphrag does)."""


class PilarError(Exception):
    """Base class of every error pilar raises on purpose."""


class IngestError(PilarError):
    """A file could not be ingested. ``str(err)`` is the reason, one line;
    ``path`` names the file when known."""

    def __init__(self, reason: str, path: str | None = None):
        super().__init__(reason)
        self.reason = reason
        self.path = path


class UnsupportedTypeError(IngestError):
    """The file's content is not a type pilar ingests (sniffed, not by name)."""


class StoreError(PilarError):
    """A store could not be opened, migrated or written."""


class ConfigError(PilarError):
    """A setting is missing or invalid."""


class QuestionsError(PilarError):
    """A questions file for evaluation cannot be read; ``str(err)`` names the
    file and the reason, one line."""


class EmptyStoreError(StoreError):
    """There is nothing to read: no store at the configured home, or a store
    without documents. ``str(err)`` says which and how to add documents."""
