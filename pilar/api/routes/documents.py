"""Documents and jobs: ``/v1/documents`` (upload or server paths -> 202 +
a queued job, run by the ingest worker beside the API), ``/v1/jobs`` (the
caller's jobs), ``/v1/jobs/{id}`` (``DELETE`` cancels; ``/events``,
server-sent events).

Responses show a document's sources as a client may see them
(:meth:`pilar.api.paths.ServerPaths.shown`), never a server path."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterable
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.sse import EventSourceResponse, ServerSentEvent
from starlette.exceptions import HTTPException as StarletteHTTPException

from pilar.api import scoping, uploads
from pilar.api.deps import RATE_LIMITED, Caller, Owner, PathsDep, PilarDep, rate_limit
from pilar.api.jobs import JobStore, discard_unstored, job_events_key, new_job, upload_folder
from pilar.api.models import (ENDED, MAX_IDS, CollectionList, CollectionName, Deleted,
                              DocumentList, DocumentOut, Job, JobAccepted, JobList, JobState,
                              JobSummary, PathsRequest, Problem, UploadForm, document_out)
from pilar.api.paths import PathRefused, ServerPaths
from pilar.config import Settings
from pilar.ingest.files import select_files
from pilar.ingest.limits import human_bytes
from pilar.model import DEFAULT_COLLECTION, check_collection
from pilar.writes import discard_upload

ERRORS = {401: {"model": Problem}, 404: {"model": Problem}, 422: {"model": Problem}}
MAX_JOB_FILES = 10_000
"""Files one server-side ingest job may hold."""
EVENT_POLL = 0.25
"""Seconds between two looks at a job's record while streaming its events."""


def readable(paths: ServerPaths, path: str, caller) -> Path:
    """``path`` resolved when ``caller`` may read it (:meth:`ServerPaths.readable`);
    HTTPException 403 or 404 otherwise."""
    try:
        return paths.readable(path, caller)
    except PathRefused as exc:
        raise HTTPException(exc.status, exc.detail) from None


def job_files(paths: ServerPaths, given: list[str], caller) -> list[tuple[str, Path]]:
    """The files of the server paths ``given`` (folders walked) as ``(name
    as given, resolved path)``: a file of a folder is named by the folder as
    given and its path below it. Every file must be readable by ``caller``
    (a symbolic link out of its roots is refused, 403)."""
    files = []
    for path in given:
        resolved = readable(paths, path, caller)
        for f in select_files([resolved]).files:
            name = path if f == resolved else str(Path(path) / f.relative_to(resolved))
            files.append((name, readable(paths, name, caller)))
    return files


def visible_job(request: Request, caller: Caller, job_id: str) -> Job:
    """Dependency: the job ``job_id`` if the caller may see it (404 otherwise);
    resolved before a response starts, so the event stream of an unknown job
    is a 404 too."""
    store: JobStore = request.app.state.jobs
    job = store.get(job_id)
    if job is None or not scoping.job_visible(caller, job):
        raise HTTPException(404, "no such job")
    return job


VisibleJob = Annotated[Job, Depends(visible_job)]


def accepted(job: Job) -> JobAccepted:
    """The 202 answer for a queued job: where to follow it."""
    return JobAccepted(job_id=job.job_id, state=job.state, href=f"/v1/jobs/{job.job_id}",
                       events=f"/v1/jobs/{job.job_id}/events")


UPLOAD_BODY = {"requestBody": {"required": True, "content": {
    "multipart/form-data": {"schema": UploadForm.model_json_schema()}}}}
"""The upload's body in the OpenAPI schema (the route reads it as a stream,
:mod:`pilar.api.uploads`, so FastAPI does not see it declared)."""


def writable(caller, collection: str) -> None:
    """403 unless ``caller`` may write to ``collection``."""
    if not caller.allows(collection):
        raise HTTPException(403, f"collection {collection!r} is outside this key's collections")


def queue(store: JobStore, owner: str, collection: str, files: list[tuple[str, Path]],
          job_id: str | None = None) -> JobAccepted:
    """Record in ``store`` a job of ``owner`` ingesting ``files`` (name as
    given, server path) into ``collection``, queued for the ingest worker;
    the 202 answer."""
    job = new_job(collection, job_id, [name for name, _ in files])
    store.create(job, owner, [path for _, path in files])
    return accepted(job)


def paths_job(store: JobStore, paths: ServerPaths, caller, owner: str,
              body: PathsRequest) -> JobAccepted:
    """Queue in ``store`` a job of ``owner`` ingesting the server files or
    folders of ``body`` (REST ``POST /v1/documents/paths`` and the MCP tool
    ``ingest_paths``): HTTPException 403 for a collection or path the
    ``caller`` may not use, 404 for a path that is not there, 422 for no
    file or more than :data:`MAX_JOB_FILES`."""
    writable(caller, body.collection)
    files = job_files(paths, body.paths, caller)
    if not files:
        raise HTTPException(422, "no files found under the given paths")
    if len(files) > MAX_JOB_FILES:
        raise HTTPException(422, f"{len(files)} files: one job takes at most {MAX_JOB_FILES}")
    return queue(store, owner, body.collection, files)


def routes(settings: Settings) -> APIRouter:
    router = APIRouter(prefix="/v1", tags=["documents"], responses=ERRORS)

    @router.post("/documents", status_code=202, response_model=JobAccepted,
                 dependencies=[rate_limit("upload")], max_body_size=settings.api_max_upload_bytes,
                 openapi_extra=UPLOAD_BODY,
                 responses={403: {"model": Problem}, 413: {"model": Problem}, **RATE_LIMITED})
    async def upload(request: Request, caller: Caller, owner: Owner):
        """Upload files (multipart: ``files`` parts with their file names,
        optionally ``collection``), written to disk as they arrive, and queue
        an ingest job; answers 202 with the job's id. A file over
        ``PILAR_MAX_FILE_BYTES``, more than ``PILAR_API_MAX_UPLOAD_FILES``
        files or a body over ``PILAR_API_MAX_UPLOAD_BYTES`` get 413 as soon
        as the bytes show it, and nothing of the upload stays on disk; a
        collection the key may not write to is 403 (before any file is
        written when the ``collection`` field comes first)."""
        uploaded = request.app.state.paths.uploads
        job_id, folder = upload_folder(uploaded)

        def collection_of(fields: dict[str, str]) -> str:  # 422 or 403 for a bad one
            collection = check_collection(fields.get("collection", DEFAULT_COLLECTION))
            writable(caller, collection)
            return collection

        def before_files(fields: dict[str, str]) -> None:
            if "collection" in fields:  # sent first: refused before a byte is written
                collection_of(fields)

        try:
            got = await uploads.receive(
                request, folder, uploaded, max_file_bytes=settings.max_file_bytes,
                max_files=settings.api_max_upload_files, before_files=before_files)
        except uploads.UploadRefused as exc:
            raise HTTPException(exc.status, exc.detail) from None
        except StarletteHTTPException as exc:  # the route's body limit
            if exc.status_code != 413:
                raise
            raise HTTPException(413, f"the upload is over the "
                                     f"{human_bytes(settings.api_max_upload_bytes)} limit of one "
                                     "request (PILAR_API_MAX_UPLOAD_BYTES)") from None
        try:
            collection = collection_of(got.fields)
            if not got.files:
                raise HTTPException(422, "files: the upload holds no file part")
        except BaseException:
            discard_upload(folder, uploaded)
            raise
        return await run_in_threadpool(queue, request.app.state.jobs, owner, collection,
                                       got.files, job_id)

    @router.post("/documents/paths", status_code=202, response_model=JobAccepted,
                 dependencies=[rate_limit("upload")],
                 responses={403: {"model": Problem}, **RATE_LIMITED})
    def ingest_paths(request: Request, caller: Caller, owner: Owner, paths: PathsDep,
                     body: PathsRequest):
        """Queue an ingest job for files or folders on the server; only paths
        under the ``PILAR_INGEST_ROOTS`` open to the key (after resolving
        symlinks) are accepted. The job names each file as given (a folder's
        files by the folder as given and their path below it)."""
        return paths_job(request.app.state.jobs, paths, caller, owner, body)

    @router.get("/jobs", response_model=JobList, tags=["jobs"])
    def list_jobs(request: Request, caller: Caller, owner: Owner,
                  state: Annotated[list[JobState] | None, Query()] = None,
                  offset: Annotated[int, Query(ge=0, le=10**9)] = 0,
                  limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> JobList:
        """The jobs the caller's key submitted (ingest and evaluation), newest
        first, ``limit`` from ``offset``, only those in ``state`` when given
        (repeatable); each without its files (``GET /v1/jobs/{id}`` has them)."""
        store: JobStore = request.app.state.jobs
        jobs = [j for j in store.owned(owner, state) if scoping.job_visible(caller, j)]
        return JobList(items=[JobSummary.of(j) for j in jobs[offset:offset + limit]],
                       total=len(jobs), offset=offset, limit=limit)

    @router.get("/jobs/{job_id}", response_model=Job, tags=["jobs"])
    def get_job(job: VisibleJob) -> Job:
        """A job's state and each file's status and reason."""
        return job

    @router.delete("/jobs/{job_id}", response_model=Job, tags=["jobs"],
                   responses={409: {"model": Problem, "description": "the job has ended"}})
    def cancel_job(request: Request, job: VisibleJob) -> Job:
        """Cancel a queued or running job: a queued one is ``cancelled`` at
        once; a running one is ``cancelling`` until its worker has stopped
        (within a second: the files being parsed are dropped, nothing of
        them is written), then ``cancelled``. Files stored before stay,
        each whole; the others are ``cancelled``. 409 when the job has
        ended (done, failed or cancelled)."""
        if job.state in ENDED:
            raise HTTPException(409, f"job_id: the job is {job.state}; there is nothing to cancel")
        job = request.app.state.jobs.cancel(job.job_id)
        if job.state == "cancelled":  # it was queued: its uploads go now
            discard_unstored(job, request.app.state.paths.uploads)
        return job

    @router.get("/jobs/{job_id}/events", response_class=EventSourceResponse, tags=["jobs"])
    async def job_events(request: Request, job_id: str,
                         job: VisibleJob
                         ) -> AsyncIterable[ServerSentEvent]:
        """Server-sent events: ``state`` for every state the job entered, in
        order, from its first (``{"state", "at"}``: queued, running,
        cancelling, done, failed, cancelled), ``progress`` with the job's
        record at first and whenever a file or a count changes while it runs, then
        ``end`` with the final record once it has ended. The job runs on
        whether or not anyone listens."""
        last, states = None, 0
        while True:
            for change in job.history[states:]:
                yield ServerSentEvent(data=change, event="state")
            states = len(job.history)
            if job.state in ENDED:
                yield ServerSentEvent(data=job, event="end")
                return
            key = job_events_key(job)
            if key != last:
                last = key
                yield ServerSentEvent(data=job, event="progress")
            await asyncio.sleep(EVENT_POLL)
            job = await asyncio.to_thread(request.app.state.jobs.get, job_id)

    @router.get("/collections", response_model=CollectionList)
    def list_collections(pilar: PilarDep, caller: Caller) -> CollectionList:
        """The collections the key may read and write: a limited key's own
        (``limited``); for any other key ``default`` and every collection
        holding a document. The web page's collection picker shows them."""
        if not caller.unlimited:
            return CollectionList(collections=sorted(caller.collections), limited=True)
        held = {d.collection for d in scoping.documents(pilar, caller)}
        return CollectionList(collections=sorted(held | {DEFAULT_COLLECTION}), limited=False)

    @router.get("/documents", response_model=DocumentList)
    def list_documents(pilar: PilarDep, caller: Caller, paths: PathsDep,
                       offset: Annotated[int, Query(ge=0, le=10**9)] = 0,
                       limit: Annotated[int, Query(ge=1, le=1000)] = 100,
                       collection: Annotated[list[CollectionName] | None,
                                             Query(max_length=MAX_IDS)] = None
                       ) -> DocumentList:
        """Stored documents the key may see, oldest first, ``limit`` from ``offset``."""
        docs = scoping.documents(pilar, caller, collection)
        return DocumentList(items=[document_out(d, paths.shown) for d in
                                   docs[offset:offset + limit]],
                            total=len(docs), offset=offset, limit=limit)

    @router.get("/documents/{doc_id}", response_model=DocumentOut)
    def get_document(pilar: PilarDep, caller: Caller, paths: PathsDep,
                     doc_id: str) -> DocumentOut:
        """One document with its sources as the client may see them; 404
        when there is none in the caller's collections."""
        doc = scoping.document(pilar, caller, doc_id)
        if doc is None:
            raise HTTPException(404, "no such document")
        return document_out(doc, paths.shown)

    @router.delete("/documents/{doc_id}", response_model=Deleted)
    def delete_document(pilar: PilarDep, caller: Caller, doc_id: str) -> Deleted:
        """Delete a document from graph and index, and the uploaded files
        that were its sources (no other document's): deletion is erasure."""
        if scoping.document(pilar, caller, doc_id) is None:
            raise HTTPException(404, "no such document")
        return Deleted(doc_id=doc_id, deleted=pilar.delete(doc_id))

    return router
