"""Uploads (``POST /v1/documents``): the multipart body streamed straight
into the job's upload folder as it arrives, its limits checked on the way.

python-multipart's streaming parser (the one Starlette uses) reads the
body; each file goes to ``PILAR_HOME/uploads/<job>/<NNN>/<name>``, ``name``
being the client's file name made safe for a file system
(:func:`stored_name`). A file over ``PILAR_MAX_FILE_BYTES`` or more than
``PILAR_API_MAX_UPLOAD_FILES`` files stop the upload with 413 as soon as the
bytes show it (a body over ``PILAR_API_MAX_UPLOAD_BYTES`` is stopped by the
route's body limit); whatever stops an upload removes all it wrote.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from python_multipart.exceptions import FormParserError
from python_multipart.multipart import MultipartParser, parse_options_header
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from pilar.ingest.limits import human_bytes
from pilar.writes import discard_upload

FIELD_BYTES = 1024
"""Largest value of a form field that is not a file (the collection)."""
POOL_BYTES = 1024 * 1024
"""Bytes of the body parsed and written per thread-pool call."""
NAME_BYTES = 200
"""Longest stored file name, in bytes of UTF-8 (file systems allow 255)."""


class UploadRefused(Exception):
    """An upload stopped: ``status`` 413 (over a limit), 400 (not a whole
    multipart body) or 415 (not multipart); ``detail`` says which."""

    def __init__(self, status: int, detail: str):
        super().__init__(detail)
        self.status, self.detail = status, detail


def stored_name(name: str) -> str:
    """The client's file name as stored: its last part (``/`` and ``\\``
    both separate), without control, format or separator characters (a
    space stays) and leading dots, cut from the front to
    :data:`NAME_BYTES`; empty if nothing is left."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    base = "".join(c for c in base if c.isprintable()).strip().lstrip(".")
    while len(base.encode()) > NAME_BYTES:
        base = base[1:]
    return base


@dataclass
class Received:
    """What an upload held: ``files`` as ``(shown name, stored path)`` in
    body order, and the form's other ``fields``."""

    files: list[tuple[str, Path]] = field(default_factory=list)
    fields: dict[str, str] = field(default_factory=dict)


class _Parts:
    """python-multipart callbacks writing file parts under ``folder``;
    ``before_files(fields)`` is called as the first file part starts."""

    def __init__(self, folder: Path, max_file_bytes: int, max_files: int, max_fields: int,
                 before_files: Callable[[dict[str, str]], None]):
        self.folder, self.max_file_bytes = folder, max_file_bytes
        self.max_files, self.max_fields = max_files, max_fields
        self.before_files = before_files
        self.got = Received()
        self.ended = False
        self._header, self._value, self._disposition = b"", b"", b""
        self._out = None
        self._field = ""
        self._data = bytearray()
        self._size = 0

    def callbacks(self) -> dict:
        return {"on_part_begin": self.on_part_begin, "on_header_field": self.on_header_field,
                "on_header_value": self.on_header_value, "on_header_end": self.on_header_end,
                "on_headers_finished": self.on_headers_finished,
                "on_part_data": self.on_part_data, "on_part_end": self.on_part_end,
                "on_end": self.on_end}

    def on_part_begin(self) -> None:
        self._disposition, self._data, self._size = b"", bytearray(), 0

    def on_header_field(self, data: bytes, start: int, end: int) -> None:
        self._header += data[start:end]

    def on_header_value(self, data: bytes, start: int, end: int) -> None:
        self._value += data[start:end]

    def on_header_end(self) -> None:
        if self._header.lower() == b"content-disposition":
            self._disposition = self._value
        self._header, self._value = b"", b""

    def on_headers_finished(self) -> None:
        _, options = parse_options_header(self._disposition)
        if b"name" not in options:
            raise UploadRefused(400, "a part of the upload has no name (Content-Disposition)")
        self._field = options[b"name"].decode("utf-8", "replace")
        if b"filename" not in options:
            if len(self.got.fields) >= self.max_fields:
                raise UploadRefused(413, f"more than {self.max_fields} form fields")
            return
        n = len(self.got.files) + 1
        if n == 1:
            self.before_files(self.got.fields)
        if n > self.max_files:
            raise UploadRefused(413, f"more than {self.max_files} files in one upload "
                                     "(PILAR_API_MAX_UPLOAD_FILES)")
        name = stored_name(options[b"filename"].decode("utf-8", "replace")) or f"file-{n}"
        path = self.folder / f"{n:03d}" / name
        path.parent.mkdir(parents=True)
        self._out = path.open("xb")
        self.got.files.append((name, path))

    def on_part_data(self, data: bytes, start: int, end: int) -> None:
        chunk = data[start:end]
        self._size += len(chunk)
        if self._out is not None:
            if self._size > self.max_file_bytes:
                raise UploadRefused(413, f"{self.got.files[-1][0]}: over the "
                                         f"{human_bytes(self.max_file_bytes)} limit of one "
                                         "file (PILAR_MAX_FILE_BYTES)")
            self._out.write(chunk)
        elif self._size > FIELD_BYTES:
            raise UploadRefused(413, f"form field {self._field!r} is over {FIELD_BYTES} bytes")
        else:
            self._data += chunk

    def on_part_end(self) -> None:
        if self._out is not None:
            self._out.close()
            self._out = None
        else:
            self.got.fields[self._field] = self._data.decode("utf-8", "replace")

    def on_end(self) -> None:
        self.ended = True

    def close(self) -> None:
        if self._out is not None:
            self._out.close()


async def receive(request: Request, folder: Path, uploads: Path, *, max_file_bytes: int,
                  max_files: int, max_fields: int = 10,
                  before_files: Callable[[dict[str, str]], None] = lambda fields: None
                  ) -> Received:
    """Stream the multipart body of ``request`` into ``folder`` (created on
    the first file; under ``uploads``). Parsing and writing run in the
    thread pool, :data:`POOL_BYTES` at a time, so the event loop never
    waits on disk.
    ``before_files(fields)`` sees the fields that came before the first
    file (a client that sends the collection first is refused before any
    byte is written) and may raise to stop the upload.

    Raises :class:`UploadRefused` (see its statuses), what ``before_files``
    raises, or whatever reading the body raises (the route's body limit, a
    client that disconnects); then nothing of the upload is left under
    ``uploads``."""
    kind, params = parse_options_header(request.headers.get("content-type", ""))
    if kind != b"multipart/form-data" or not params.get(b"boundary"):
        raise UploadRefused(415, "an upload is multipart/form-data (files and collection)")
    parts = _Parts(folder, max_file_bytes, max_files, max_fields, before_files)
    parser = MultipartParser(params[b"boundary"], parts.callbacks())
    try:
        held = bytearray()  # the stream's small chunks, handed to the pool a MiB at a time
        async for chunk in request.stream():
            held += chunk
            if len(held) >= POOL_BYTES:
                await run_in_threadpool(parser.write, bytes(held))
                held.clear()
        await run_in_threadpool(parser.write, bytes(held))
        parser.finalize()
        if not parts.ended:
            raise UploadRefused(400, "the upload ended before its closing boundary")
    except FormParserError:
        parts.close()
        discard_upload(folder, uploads)
        raise UploadRefused(400, "the upload is not a valid multipart/form-data body") from None
    except BaseException:
        parts.close()
        discard_upload(folder, uploads)
        raise
    return parts.got
