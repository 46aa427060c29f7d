"""Scale-out ingest on a Ray cluster (the optional extra ``pilar[ray]``).

:func:`ray_parse_many` runs the same parse stage as the local worker pool
(:func:`pilar.ingest.parallel.parse_many`: in a worker process within the
parse budgets, killed with the Ray worker that started it) and the embed stage
(:func:`pilar.retrieval.embeddings.page_vectors`) as one Ray task per file;
the caller (:meth:`pilar.Pilar.ingest` with ``ray=``) stays the one writer,
storing each document to the configured stores (Neo4j + Elasticsearch in
production). Each Ray worker process loads the embedder once, on
``settings.embedding_device`` (a task asks Ray for one GPU when that device
is ``cuda``). pilar must be importable on every node (installed, or on the
workers' ``PYTHONPATH``).
"""

from __future__ import annotations

import socket
import time
from collections import deque
from collections.abc import Iterable, Iterator
from typing import TypeVar

from pilar.config import Settings
from pilar.errors import ConfigError
from pilar.ingest.parallel import Parsed, failure_reason, parse_many
from pilar.retrieval.embeddings import Embedder, page_vectors

T = TypeVar("T")
_EMBEDDERS: dict[tuple, Embedder] = {}


def _embedder(settings: Settings) -> Embedder:
    """This worker process's embedder for ``settings`` (loaded once), as a
    local ingest makes it (int8 documents on ONNX Runtime with the onnx
    query encoder), without the home's vector cache."""
    key = (settings.embedding_model, settings.embedding_device, settings.query_encoder,
           str(settings.models_dir or settings.home / "models"))
    if key not in _EMBEDDERS:
        _EMBEDDERS[key] = Embedder.of(settings, cache=False)
    return _EMBEDDERS[key]


def parse_and_embed(data: bytes, uri: str, doc_id: str | None, settings: Settings):
    """One Ray task: the parse, in a worker process of this Ray worker within
    the parse budgets (:func:`~pilar.ingest.parallel.parse_many` with one
    worker, which dies with this process), then the document's page vectors;
    ``(document | None, reason | None, stages, vectors | None)``; raises only
    :class:`ConfigError` (a bad setting)."""
    (item,) = parse_many([(0, data, uri, doc_id)], settings, 1)
    parsed, reason, stages = item.document, item.reason, item.stages
    vectors = None
    if parsed is not None:
        t = time.perf_counter()
        try:
            vectors = page_vectors(_embedder(settings), [parsed])[0]
        except ConfigError:  # the embedding model: every file would fail alike
            raise
        except Exception as exc:  # noqa: BLE001 - reported as this file's failure
            parsed, reason = None, failure_reason(exc)
        stages["embed"] = time.perf_counter() - t
    return parsed, reason, stages, vectors


def _probe(address: str, timeout: float = 5.0) -> None:
    """Connect to the ``host:port`` in ``address`` (``ray://`` stripped) within
    ``timeout`` seconds, so an unreachable cluster fails at once rather than
    after ``ray.init``'s minutes of retries; ``auto`` is left to Ray (it fails
    fast when no cluster is known). Raises :class:`ConfigError` (one line)."""
    if address == "auto":
        return
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not port.isdigit():
        raise ConfigError(f"--ray {address!r}: expected auto, HOST:PORT or ray://HOST:PORT")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as exc:
        raise ConfigError(f"cannot reach the Ray cluster at {address!r}: "
                          f"{exc.strerror or type(exc).__name__}") from None


def ray_parse_many(jobs: Iterable[tuple[T, bytes | None, str, str | None]], settings: Settings,
                   address: str, in_flight: int | None = None) -> Iterator[Parsed[T]]:
    """Like :func:`pilar.ingest.parallel.parse_many`, on the Ray cluster at
    ``address`` (``auto`` = the cluster this machine belongs to, or
    ``host:port`` / ``ray://host:port``): one task per job, results in input
    order with their vectors (``Parsed.vectors``), at most ``in_flight``
    tasks (default: twice the cluster's CPUs) submitted ahead.

    Raises :class:`ConfigError` when Ray is not installed or the cluster
    cannot be reached.
    """
    try:
        import ray
    except ImportError:
        raise ConfigError("--ray needs the extra pilar[ray] (pip install 'pilar[ray]')") from None
    _probe(address)  # also when this process is already connected (to another cluster)
    if not ray.is_initialized():
        try:
            ray.init(address=address, logging_level="ERROR", log_to_driver=False)
        except Exception as exc:  # noqa: BLE001 - any connection failure is a config problem
            raise ConfigError(f"cannot reach the Ray cluster at {address!r}: "
                              f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
                              ) from None
    gpu = 1 if settings.embedding_device.startswith("cuda") else 0
    task = ray.remote(num_gpus=gpu, max_retries=1)(parse_and_embed)
    limit = in_flight or max(2, 2 * int(ray.cluster_resources().get("CPU", 1)))
    settings_ref = ray.put(settings)
    pending: deque = deque()

    def result(tag, ref) -> Parsed:
        if ref is None:
            return Parsed(tag, None, None, {})
        try:
            parsed, reason, stages, vectors = ray.get(ref)
        except Exception as exc:  # noqa: BLE001 - a task or worker failed
            cause = getattr(exc, "cause", exc)
            if isinstance(exc, ConfigError) or isinstance(cause, ConfigError):
                raise ConfigError(str(cause)) from None
            return Parsed(tag, None, f"Ray task failed: {failure_reason(exc)}", {})
        return Parsed(tag, parsed, reason, stages, vectors)

    for tag, data, uri, doc_id in jobs:
        pending.append((tag, task.remote(data, uri, doc_id, settings_ref)
                        if data is not None else None))
        while len(pending) > limit or (pending and pending[0][1] is None):
            yield result(*pending.popleft())
    while pending:
        yield result(*pending.popleft())
