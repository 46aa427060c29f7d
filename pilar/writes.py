"""Documents written to the page index and the graph, each as one unit of
work, in batches.

Writes follow DESIGN.md's protocol for two separate stores, for a batch of
documents at once (:meth:`DocumentWriter.store_many`): the graph records
them ``pending`` (one write), the index takes all their pages (one bulk
write and one refresh on Elasticsearch), then the graph takes all their
layers with status ``ready`` in one transaction (the visibility switch every
read honours: every document of the batch appears at once, whole); a failed
write removes what it wrote and each document is tried again alone, and
documents left ``pending`` or ``deleting`` by a crash are removed by the
next ingest (one writer at a time, :meth:`DocumentWriter.recover`), after
which those files ingest afresh. On the embedded store the whole batch is
also one SQLite transaction. A document and its entities belong to its collection: a write
never touches another collection's documents (a known path or known
entities are looked up within the collection). Deleting a document erases
the files of the server's upload folder (``PILAR_HOME/uploads``) that were
its sources and that no document lists any more (:func:`discard_upload`).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np

from pilar.config import Settings
from pilar.errors import ConfigError
from pilar.graph import GraphStore
from pilar.graph.linking import in_collection, link_batch
from pilar.model import IndexedPages, ParsedDocument, Unit
from pilar.retrieval import PageIndex

Stored = tuple[ParsedDocument, list[np.ndarray], list[list[str | None]]]
"""What :meth:`DocumentWriter.store_many` takes per document: the parsed
document, its pages' vectors and unit ids
(:func:`~pilar.retrieval.embeddings.page_vectors`)."""


def page_sections(parsed: ParsedDocument) -> list[list[str]]:
    """Per page of ``parsed`` (in order), the distinct section paths of its
    supports, each ``" > "``-joined: what the index keeps as keywords."""
    by_page: dict[int, dict[str, None]] = {p.number: {} for p in parsed.pages}
    for s in parsed.supports:
        path = s.provenance.section_path
        if path and s.provenance.page in by_page:
            by_page[s.provenance.page][" > ".join(path)] = None
    return [list(by_page[p.number]) for p in parsed.pages]


class DocumentWriter:
    """Stores and removes whole documents in ``graph`` and ``index`` (see
    the module docstring). ``on_change()`` is called before every
    :meth:`store_many` and :meth:`delete` (the facade empties its page cache there);
    ``unit_stats(units)`` sets the packing statistics of a document's units
    before they are written (:func:`pilar.packing.statistics.fill_stats`)."""

    def __init__(self, graph: GraphStore, index: PageIndex, settings: Settings,
                 on_change: Callable[[], None] = lambda: None,
                 unit_stats: Callable[[list[Unit]], object] = lambda units: None):
        self.graph = graph
        self.index = index
        self.settings = settings
        self.on_change = on_change
        self.unit_stats = unit_stats

    def store_many(self, items: list[Stored]) -> list[bool | Exception]:
        """Write a batch of parsed documents, each with its page vectors and
        unit ids, to index and graph together (see the module docstring):
        all recorded ``pending`` in one graph write, all their pages in one
        index write (one refresh), all their layers ``ready`` in one graph
        transaction, then the versions they replace removed. Per item, in
        order: True when it replaced an older version at the same uri, False
        when new, or the exception it failed with. When the batch write fails
        its documents are removed and each is written again alone, so one bad
        document fails by itself. A :class:`~pilar.errors.ConfigError` or an
        interrupt (``BaseException``) is raised, after the clean-up."""
        if not items:
            return []
        self.on_change()
        try:
            return self._write_batch(items)
        except ConfigError:
            raise
        except Exception as exc:  # noqa: BLE001 - attributed per document below
            if len(items) == 1:
                return [exc]
        out: list[bool | Exception] = []
        for item in items:
            try:
                out.extend(self._write_batch([item]))
            except ConfigError:
                raise
            except Exception as exc:  # noqa: BLE001 - this document fails alone
                out.append(exc)
        return out

    def _write_batch(self, items: list[Stored]) -> list[bool | Exception]:
        """One attempt at :meth:`store_many`; raises when a step before the
        visibility switch fails (after removing what it wrote)."""
        olds: list[list[str]] = []
        replaced: list[bool] = []
        for parsed, _, _ in items:
            doc = parsed.document
            known = [d for d in self.graph.find_by_uri(doc.uri, doc.collection)
                     if d.doc_id != doc.doc_id]
            # new bytes at a known path: a document also found elsewhere only
            # loses this path; one found nowhere else is replaced
            for d in known:
                if len(d.sources) > 1:
                    self.graph.remove_source(d.doc_id, doc.uri)
            olds.append([d.doc_id for d in known if len(d.sources) <= 1])
            replaced.append(bool(known))
            in_collection(parsed)
            self.unit_stats(parsed.units)
        link_batch([parsed for parsed, _, _ in items], self.graph, self.settings)
        docs = [parsed.document for parsed, _, _ in items]
        ids = [d.doc_id for d in docs]
        # on the embedded store the index transaction encloses everything
        # (one SQLite transaction); on servers each step commits on its own
        with self.index.transaction():
            self.graph.begin_documents(docs)                     # 1. pending
            try:
                self.index.delete_documents(ids)                 # leftovers of a crash
                self.index.add_documents([                       # 2. index, one refresh
                    IndexedPages(parsed.pages, vectors, unit_ids, parsed.document.collection,
                                 page_sections(parsed)) for parsed, vectors, unit_ids in items])
                self.graph.write_documents([(parsed, old) for (parsed, _, _), old
                                            in zip(items, olds)])    # 3. graph, ready
            except BaseException:
                for doc_id in ids:
                    self.remove(doc_id, quiet=True)
                raise
            out: list[bool | Exception] = []
            for old, was in zip(olds, replaced):                 # 4. old versions
                try:
                    for doc_id in old:
                        self.remove(doc_id)
                    out.append(was)
                except Exception as exc:  # noqa: BLE001 - stored; the old one is left hidden
                    out.append(exc)
        return out

    def remove(self, doc_id: str, quiet: bool = False) -> bool:
        """Remove a document: hide it (``deleting``), drop its index pages,
        then its graph rows; False if the graph did not hold it. With
        ``quiet`` (cleaning up after a failed write) errors are swallowed:
        what is left stays hidden and the next ingest removes it."""
        try:
            self.graph.set_status(doc_id, "deleting")
            self.index.delete_document(doc_id)
            return self.graph.delete_document(doc_id)
        except Exception:  # noqa: BLE001 - only with quiet; the first error is the one to report
            if not quiet:
                raise
            return False

    def delete(self, doc_id: str) -> bool:
        """Delete a document from index and graph (one transaction on the
        embedded store), then its uploaded sources no other document lists
        (:meth:`discard_uploads`); False if it was not stored."""
        self.on_change()
        found = self.graph.documents([doc_id], statuses=None)
        with self.index.transaction():
            deleted = self.remove(doc_id)
        if found:
            self.discard_uploads(found[0].sources)
        return deleted

    def discard_uploads(self, uris: Iterable[str]) -> None:
        """Erase the files among ``uris`` that lie in the upload folder
        (``settings.uploads``) and that no stored document (of any
        collection) has among its sources; other paths are never touched."""
        uploads = self.settings.uploads.resolve()
        for uri in uris:
            if Path(uri).is_relative_to(uploads) and not self.graph.find_by_uri(uri):
                discard_upload(Path(uri), uploads)

    def recover(self) -> list[str]:
        """Remove the documents a crashed write left ``pending`` or
        ``deleting`` (index first, then graph); returns their ids. Assumes
        no other process is writing to the same stores."""
        stale = self.graph.documents(statuses=("pending", "deleting"))
        for doc in stale:
            self.remove(doc.doc_id)
        return [d.doc_id for d in stale]


def discard_upload(path: Path, uploads: Path) -> None:
    """Remove ``path`` (a file or a folder, if present) and then the folders
    above it that are left empty, up to (not including) ``uploads``."""
    if path.is_dir():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)
    for folder in path.parents:
        if folder == uploads or not folder.is_relative_to(uploads):
            break
        try:
            folder.rmdir()
        except OSError:  # not empty (or already gone): the folders above stay
            break
