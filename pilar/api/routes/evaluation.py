"""``POST /v1/eval``: an evaluation of search (and, with ``reader``, of the
answers) as a job of the server's evaluation thread, followed at ``GET /v1/jobs/{id}``
(questions done of the total, then the report ``pilar eval --json`` writes)
and ``/v1/jobs/{id}/events``.

Questions come from a TSV on the server, only under the
``PILAR_INGEST_ROOTS`` open to the key (as server-side document paths), or
inline; the report names the file as the caller gave it. The evaluation reads only the
key's collections (:func:`pilar.api.scoping.eval_collections`), and only a
key that sees every collection it read sees the job.
"""

# no ``from __future__ import annotations``: the body model is built per settings

from fastapi import APIRouter, HTTPException, Request

from pilar.api import scoping
from pilar.api.deps import RATE_LIMITED, Caller, Owner, PathsDep, PilarDep, rate_limit
from pilar.api.models import EvalQuestion, JobAccepted, Problem, eval_request
from pilar.api.routes.documents import accepted, readable
from pilar.config import Settings
from pilar.eval.questions import Question, load_questions
from pilar.model import Scope
from pilar.query import check_question


def question_of(q: EvalQuestion) -> Question:
    """The :class:`~pilar.eval.questions.Question` of an inline question
    (gold: the page when given, else the document)."""
    gold = q.gold_page or q.gold_doc
    return Question(q.id, q.question, tuple(q.answers), (gold,) if gold else ())


def routes(settings: Settings) -> APIRouter:
    router = APIRouter(prefix="/v1", tags=["eval"], responses={
        401: {"model": Problem}, 403: {"model": Problem}, 404: {"model": Problem},
        422: {"model": Problem}, 503: {"model": Problem}})
    EvalRequest = eval_request(settings)

    @router.post("/eval", status_code=202, response_model=JobAccepted,
                 dependencies=[rate_limit("eval")], responses=RATE_LIMITED)
    def evaluate(pilar: PilarDep, caller: Caller, owner: Owner, paths: PathsDep,
                 req: EvalRequest, request: Request):
        """Queue an evaluation: recall@k, MRR, support-chain coverage and
        evidence delivery per question, and with ``reader`` EM, ANLS and
        citation support of its answer (pilar.eval.metrics). Answers 202 with
        the job; a questions file that cannot be read is 422, ``reader``
        without a reader configured 503."""
        if req.reader:
            pilar.reader  # noqa: B018 - 503 now rather than a failed job
        source: str | list[Question]
        if req.questions_path is not None:
            path = readable(paths, req.questions_path, caller)
            if not path.is_file():
                raise HTTPException(422, f"{req.questions_path}: not a file")
            found, _ = load_questions(path, req.limit)  # unreadable: 422 before queueing
            source, total = str(path), len(found)
        else:
            source = [question_of(q) for q in req.questions]
            total = min(len(source), req.limit or len(source))
        if not total:
            raise HTTPException(422, "no questions to evaluate")
        collections = scoping.eval_collections(caller, req.collections)
        # the checks of every request (pilar.query), before a job is queued
        pilar.require_scope(Scope.of(collections))
        for q in req.questions or ():
            check_question(q.question, settings.max_query_chars)

        def run(progress):
            report = pilar.evaluate(source, budget=req.budget_tokens, k=req.k,
                                    profile=req.profile, limit=req.limit, progress=progress,
                                    reader=req.reader, collections=collections)
            report.questions = req.questions_path or report.questions
            return report

        return accepted(request.app.state.evals.submit(owner, collections, total, run))

    return router
