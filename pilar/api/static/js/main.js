// Boot: probe the API; if it answers 401, show only the key gate (nothing
// else is rendered or fetched); with a working key (or an open server) show
// the tabs. The key lives in sessionStorage for this tab.
import { ApiError, AuthRequired, key, whenAuthLost } from "./api.js";
import * as ask from "./ask.js";
import * as collections from "./collections.js";
import * as documents from "./documents.js";
import * as entities from "./entities.js";
import * as evidence from "./evidence.js";

const $ = (id) => document.getElementById(id);

function lock(message = "") {
  $("app").hidden = true;
  $("tabs").hidden = true;
  $("sign-out").hidden = true;
  $("collection-picker").hidden = true;
  // drop whatever was rendered with the old key
  for (const sel of ["#docs tbody", "#jobs", "#packet", "#answer", "#entity-hits", "#hood-lists", "#ev-body",
    "#collection"]) {
    document.querySelector(sel).replaceChildren();
  }
  $("hood").hidden = true;
  $("evidence").hidden = true;
  $("key-gate").hidden = false;
  $("key-error").textContent = message;
  $("key-input").focus();
}

async function unlock() {
  try {
    await collections.load();
    await Promise.all([documents.refresh(), ask.limits()]);
  } catch (error) {
    if (error instanceof AuthRequired) return; // whenAuthLost already showed the gate
    $("boot-error").hidden = false;
    $("boot-error").textContent = `The server did not answer: ${error.message}`;
    return;
  }
  $("key-gate").hidden = true;
  $("boot-error").hidden = true;
  $("app").hidden = false;
  $("tabs").hidden = false;
  $("sign-out").hidden = !key.get();
}

function tabs() {
  const buttons = document.querySelectorAll("#tabs button");
  for (const button of buttons) {
    button.addEventListener("click", () => {
      for (const b of buttons) b.setAttribute("aria-selected", String(b === button));
      for (const section of document.querySelectorAll(".tab")) section.hidden = section.id !== button.dataset.tab;
    });
  }
}

whenAuthLost(() => {
  const had = key.get();
  key.clear();
  lock(had ? "That key was refused." : "");
});

$("key-form").addEventListener("submit", (e) => {
  e.preventDefault();
  key.set($("key-input").value.trim());
  $("key-input").value = "";
  unlock();
});
$("sign-out").addEventListener("click", () => { key.clear(); lock(); });

tabs();
collections.setup();
documents.setup();
ask.setup();
entities.setup();
evidence.setup();
window.addEventListener("unhandledrejection", (e) => {
  if (e.reason instanceof ApiError) e.preventDefault();
});
unlock();
