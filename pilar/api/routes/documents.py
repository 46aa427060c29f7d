"""Documents and ingest jobs: ``/v1/documents`` (upload or server paths ->
202 + job), ``/v1/jobs/{id}`` (+ ``/events``, server-sent events)."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
from collections.abc import AsyncIterable
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Depends, File, Form, HTTPException, Query, Request, UploadFile
from fastapi.sse import EventSourceResponse, ServerSentEvent

from pilar.api import scoping
from pilar.api.deps import RATE_LIMITED, Caller, PilarDep, rate_limit
from pilar.api.jobs import IngestWorker, JobStore, job_events_key, safe_name
from pilar.api.models import (MAX_IDS, Deleted, DocumentList, DocumentOut, Job, JobAccepted,
                              PathsRequest, Problem)
from pilar.config import Settings
from pilar.ingest.files import select_files

ERRORS = {401: {"model": Problem}, 404: {"model": Problem}, 422: {"model": Problem}}
COPY_CHUNK = 1024 * 1024
MAX_JOB_FILES = 10_000
"""Files one server-side ingest job may hold."""
EVENT_POLL = 0.25
"""Seconds between two looks at a job's record while streaming its events."""


def ingest_roots(settings: Settings) -> list[Path]:
    """The resolved folders of ``PILAR_INGEST_ROOTS`` (os.pathsep or comma separated)."""
    parts = re.split(f"[,{re.escape(os.pathsep)}]", settings.ingest_roots)
    return [Path(p.strip()).expanduser().resolve() for p in parts if p.strip()]


def under_roots(path: str, roots: list[Path]) -> Path:
    """``path`` resolved (symlinks followed) when it lies under one of ``roots``.

    Raises HTTPException 403 when it does not (or when no root is set) and
    404 when it does not exist."""
    if not roots:
        raise HTTPException(403, "server-side paths are off: PILAR_INGEST_ROOTS is empty")
    resolved = Path(path).expanduser().resolve()
    if not any(resolved.is_relative_to(root) for root in roots):
        raise HTTPException(403, f"{path}: not under PILAR_INGEST_ROOTS")
    if not resolved.exists():
        raise HTTPException(404, f"{path}: no such file or folder on the server")
    return resolved


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


def routes(settings: Settings) -> APIRouter:
    router = APIRouter(prefix="/v1", tags=["documents"], responses=ERRORS)
    roots = ingest_roots(settings)

    def worker(request: Request) -> IngestWorker:
        return request.app.state.worker

    def check_collection(caller, collection: str) -> None:
        if not caller.allows(collection):
            raise HTTPException(403, f"collection {collection!r} is outside this key's collections")

    @router.post("/documents", status_code=202, response_model=JobAccepted,
                 dependencies=[rate_limit("upload")], responses=RATE_LIMITED,
                 max_body_size=settings.api_max_upload_bytes,
                 form_limits={"max_files": settings.api_max_upload_files, "max_fields": 10})
    def upload(request: Request, caller: Caller,
               files: Annotated[list[UploadFile], File(description="PDF or HTML files")],
               collection: Annotated[str, Form(min_length=1, max_length=200)] = "default"):
        """Upload files (multipart, written to disk as they arrive) and queue
        an ingest job; answers 202 with the job's id. Bodies above
        ``PILAR_API_MAX_UPLOAD_BYTES`` get 413."""
        check_collection(caller, collection)
        w = worker(request)
        job, folder = w.new_job(collection)
        stored = []
        for i, upload in enumerate(files):
            name = upload.filename or f"file-{i + 1}"
            target = folder / f"{i + 1:03d}-{safe_name(name)}"
            with target.open("wb") as out:
                shutil.copyfileobj(upload.file, out, COPY_CHUNK)
            stored.append((name, target))
        return accepted(w.submit(job, stored))

    @router.post("/documents/paths", status_code=202, response_model=JobAccepted,
                 dependencies=[rate_limit("upload")],
                 responses={403: {"model": Problem}, **RATE_LIMITED})
    def ingest_paths(request: Request, caller: Caller, body: PathsRequest):
        """Queue an ingest job for files or folders on the server; only paths
        under ``PILAR_INGEST_ROOTS`` (after resolving symlinks) are accepted."""
        check_collection(caller, body.collection)
        files = []
        for path in body.paths:
            resolved = under_roots(path, roots)
            for f in select_files([resolved]).files:
                files.append((str(f), under_roots(str(f), roots)))
        if not files:
            raise HTTPException(422, "no files found under the given paths")
        if len(files) > MAX_JOB_FILES:
            raise HTTPException(422, f"{len(files)} files: one job takes at most {MAX_JOB_FILES}")
        w = worker(request)
        job, _ = w.new_job(body.collection)
        return accepted(w.submit(job, files))

    @router.get("/jobs/{job_id}", response_model=Job, tags=["jobs"])
    def get_job(job: VisibleJob) -> Job:
        """A job's state and each file's status and reason."""
        return job

    @router.get("/jobs/{job_id}/events", response_class=EventSourceResponse, tags=["jobs"])
    async def job_events(request: Request, job_id: str,
                         job: VisibleJob
                         ) -> AsyncIterable[ServerSentEvent]:
        """Server-sent events: ``progress`` with the job's record whenever it
        changes, then ``end`` when the job is done or failed. The job runs
        on whether or not anyone listens."""
        last = None
        while True:
            key = job_events_key(job)
            if key != last:
                last = key
                finished = job.state in ("done", "failed")
                yield ServerSentEvent(data=job, event="end" if finished else "progress")
                if finished:
                    return
            await asyncio.sleep(EVENT_POLL)
            job = await asyncio.to_thread(request.app.state.jobs.get, job_id)

    @router.get("/documents", response_model=DocumentList)
    def list_documents(pilar: PilarDep, caller: Caller,
                       offset: Annotated[int, Query(ge=0, le=10**9)] = 0,
                       limit: Annotated[int, Query(ge=1, le=1000)] = 100,
                       collection: Annotated[list[str] | None, Query(max_length=MAX_IDS)] = None
                       ) -> DocumentList:
        """Stored documents the key may see, oldest first, ``limit`` from ``offset``."""
        docs = scoping.documents(pilar, caller, collection)
        return DocumentList(items=[DocumentOut.model_validate(d) for d in
                                   docs[offset:offset + limit]],
                            total=len(docs), offset=offset, limit=limit)

    @router.get("/documents/{doc_id}", response_model=DocumentOut)
    def get_document(pilar: PilarDep, caller: Caller, doc_id: str) -> DocumentOut:
        doc = scoping.document(pilar, caller, doc_id)
        if doc is None:
            raise HTTPException(404, "no such document")
        return DocumentOut.model_validate(doc)

    @router.delete("/documents/{doc_id}", response_model=Deleted)
    def delete_document(pilar: PilarDep, caller: Caller, doc_id: str) -> Deleted:
        """Delete a document from graph and index."""
        if scoping.document(pilar, caller, doc_id) is None:
            raise HTTPException(404, "no such document")
        return Deleted(doc_id=doc_id, deleted=pilar.delete(doc_id))

    return router
