// The one way the page talks to the server: every request carries the API key
// (sessionStorage, this tab only) as `Authorization: Bearer`; problem+json
// errors become ApiError; a 401 drops the key and calls the handler that
// shows the key gate. Server-sent events are read with fetch streaming, so the
// key travels in a header and never in a URL.
import { EventSourceParserStream } from "../vendor/eventsource-parser-4.1.3/stream.js";

const STORE = "pilar.apiKey";

/** An error response: `status`, and `title`/`detail` from problem+json. */
export class ApiError extends Error {
  constructor(status, title, detail) {
    super(detail || title || `HTTP ${status}`);
    this.status = status;
    this.title = title;
  }
}

/** The server wants a (valid) key: the gate is shown, nothing else. */
export class AuthRequired extends ApiError {}

let onAuthLost = () => {};

/** Register what to do when the server answers 401 (show the key gate). */
export function whenAuthLost(handler) { onAuthLost = handler; }

export const key = {
  get: () => sessionStorage.getItem(STORE) || "",
  set: (value) => sessionStorage.setItem(STORE, value),
  clear: () => sessionStorage.removeItem(STORE),
};

function headers(extra = {}) {
  const h = new Headers(extra);
  const k = key.get();
  if (k) h.set("Authorization", `Bearer ${k}`);
  return h;
}

async function failure(response) {
  let title = response.statusText, detail = "";
  try {
    const body = await response.json();
    title = body.title || title;
    detail = body.detail || "";
    if (Array.isArray(detail)) detail = detail.map((d) => d.msg || JSON.stringify(d)).join("; ");
  } catch { /* not JSON: keep the status text */ }
  const Kind = response.status === 401 ? AuthRequired : ApiError;
  return new Kind(response.status, title, typeof detail === "string" ? detail : JSON.stringify(detail));
}

async function send(path, { method = "GET", json, body, signal, accept } = {}) {
  const init = { method, headers: headers(accept ? { Accept: accept } : {}), signal };
  if (json !== undefined) {
    init.headers.set("Content-Type", "application/json");
    init.body = JSON.stringify(json);
  } else if (body !== undefined) {
    init.body = body;
  }
  const response = await fetch(path, init);
  if (!response.ok) {
    const error = await failure(response);
    if (error instanceof AuthRequired) onAuthLost(error);
    throw error;
  }
  return response;
}

/** JSON from `path` (null for 204). Options: method, json (a body to send as
 * JSON), body (FormData etc.), signal. Throws ApiError / AuthRequired. */
export async function call(path, options) {
  const response = await send(path, options);
  return response.status === 204 ? null : response.json();
}

/** An object URL for a binary resource (page images), to use as img.src;
 * revoke it when the image is replaced. */
export async function blobUrl(path, options) {
  const response = await send(path, options);
  return URL.createObjectURL(await response.blob());
}

/** Server-sent events of `path` as an async iterator of {event, data, id}
 * (data parsed as JSON when it is JSON). Ends when the server closes the
 * stream; abort with `signal`. Options as `call` (method, json: a POST that
 * answers with a stream). Throws ApiError when the server answers an error
 * instead of a stream. */
export async function* events(path, { signal, method, json } = {}) {
  const response = await send(path, { signal, method, json, accept: "text/event-stream" });
  const reader = response.body
    .pipeThrough(new TextDecoderStream())
    .pipeThrough(new EventSourceParserStream())
    .getReader();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      let data = value.data;
      try { data = JSON.parse(data); } catch { /* plain text event */ }
      yield { event: value.event || "message", data, id: value.id };
    }
  } finally {
    reader.releaseLock();
  }
}

/** Encode one path segment (ids hold ':' and may hold '/'). */
export const seg = (s) => encodeURIComponent(String(s));
