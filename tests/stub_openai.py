"""A LOCAL OpenAI-compatible STUB server for tests — never a real model.

:class:`StubOpenAI` serves ``POST /v1/chat/completions`` on 127.0.0.1 (an
ephemeral port, in a thread, std-lib ``http.server``) from recorded JSON in
``tests/fixtures/llm/``. The request's ``model`` names the fixture file
(``model="text_ok"`` reads ``text_ok.json``), so one stub serves every
scenario:

.. code-block:: json

    {"description": "...",
     "replies": [{"match": "text in the last user message", "content": {...}}],
     "default": {"content": {"assertions": []}}}

A reply may hold ``content`` (a JSON value, sent as its JSON text; or a
string, sent as is — how malformed JSON is recorded), ``refusal`` (the
message's refusal text, content null), ``status`` + ``error`` (an HTTP
error with an OpenAI-style error body) and ``delay`` (seconds to sleep
first — how timeouts are recorded), ``raw`` (a body sent as is with status
200 and ``text/html``: a reply that is not JSON at all) and, for streamed
requests (``"stream": true``), ``deltas`` (text chunks sent as server-sent
events) followed by ``stream_error`` (an error event midway — how a server
failing mid-answer is recorded). ``match`` is looked up in the text parts
of the last user message; the first reply that matches wins, else
``default``. Every request body is kept in :attr:`StubOpenAI.requests`.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "llm"


def _user_text(body: dict) -> str:
    for msg in reversed(body.get("messages") or []):
        if msg.get("role") != "user":
            continue
        content = msg.get("content")
        if isinstance(content, str):
            return content
        return "\n".join(part.get("text", "") for part in content or []
                         if isinstance(part, dict) and part.get("type") == "text")
    return ""


class StubOpenAI:
    """The stub server (see the module docstring). Use as a context manager
    or call :meth:`start` / :meth:`stop`; :attr:`base_url` ends in ``/v1``."""

    def __init__(self, fixtures: Path = FIXTURES):
        self.fixtures = Path(fixtures)
        self.requests: list[dict] = []
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None, "stub not started"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> StubOpenAI:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # quiet
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except json.JSONDecodeError:
                    return self._send(400, {"error": {"message": "bad JSON body"}})
                stub.requests.append(body)
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    return self._send(404, {"error": {"message": f"no route {self.path}"}})
                reply = stub.reply_for(body)
                if reply is None:
                    return self._send(404, {"error": {"message": "unknown stub scenario",
                                                      "code": "model_not_found"}})
                if reply.get("delay"):
                    time.sleep(float(reply["delay"]))
                if reply.get("status", 200) != 200:
                    return self._send(reply["status"], {"error": reply.get("error") or {
                        "message": "stub error"}})
                if "raw" in reply:
                    return self._send(200, reply["raw"].encode(), "text/html")
                if body.get("stream") and "deltas" in reply:
                    return self._send(200, stub.events(body, reply), "text/event-stream")
                return self._send(200, stub.completion(body, reply))

            def _send(self, status: int, payload: dict | bytes,
                      media_type: str = "application/json") -> None:
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", media_type)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True,
                                        name="stub-openai")
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> StubOpenAI:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def reply_for(self, body: dict) -> dict | None:
        """The recorded reply for a request, or None for an unknown model."""
        path = self.fixtures / f"{body.get('model', '')}.json"
        if not path.is_file():
            return None
        scenario = json.loads(path.read_text(encoding="utf-8"))
        text = _user_text(body)
        for reply in scenario.get("replies", []):
            if reply.get("match", "") in text:
                return reply
        return scenario.get("default", {"content": {"assertions": []}})

    @staticmethod
    def events(body: dict, reply: dict) -> bytes:
        """A streamed reply: one ``chat.completion.chunk`` event per delta,
        then an error event (``stream_error``) or ``[DONE]``."""
        out = []
        for text in reply["deltas"]:
            chunk = {"id": "chatcmpl-stub", "object": "chat.completion.chunk", "created": 0,
                     "model": body.get("model", ""),
                     "choices": [{"index": 0, "delta": {"content": text},
                                  "finish_reason": None}]}
            out.append(f"data: {json.dumps(chunk)}\n\n")
        if reply.get("stream_error"):
            out.append(f"data: {json.dumps({'error': {'message': reply['stream_error']}})}\n\n")
        else:
            out.append("data: [DONE]\n\n")
        return "".join(out).encode()

    @staticmethod
    def completion(body: dict, reply: dict) -> dict:
        """A ``chat.completion`` object carrying the recorded content or refusal."""
        content = reply.get("content")
        if content is not None and not isinstance(content, str):
            content = json.dumps(content)
        message = {"role": "assistant", "content": content,
                   "refusal": reply.get("refusal")}
        if reply.get("refusal"):
            message["content"] = None
        return {"id": "chatcmpl-stub", "object": "chat.completion", "created": 0,
                "model": body.get("model", ""),
                "choices": [{"index": 0, "message": message, "finish_reason": "stop",
                             "logprobs": None}],
                "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}}
