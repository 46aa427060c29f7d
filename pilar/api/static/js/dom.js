// Building DOM from data without innerHTML: text is always text, so stored
// document content can never become markup.

/** h("tag.class", {attr: value, onclick: fn, dataset: {...}}, ...children) */
export function h(spec, attrs = {}, ...children) {
  const [tag, ...classes] = spec.split(".");
  const el = document.createElement(tag || "div");
  if (classes.length) el.className = classes.join(" ");
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) el.addEventListener(name.slice(2), value);
    else if (name === "dataset") Object.assign(el.dataset, value);
    else if (name === "style") Object.assign(el.style, value);
    else el.setAttribute(name, value === true ? "" : String(value));
  }
  el.append(...children.flat().filter((c) => c !== undefined && c !== null && c !== false));
  return el;
}

/** Replace the children of `el`. */
export function fill(el, ...children) {
  el.replaceChildren(...children.flat().filter((c) => c !== undefined && c !== null && c !== false));
  return el;
}

/** "12.3" for numbers, "" for missing ones. */
export const num = (x, digits = 3) => (typeof x === "number" ? x.toFixed(digits) : "");

/** Shorten `text` to `n` characters. */
export const clip = (text, n = 80) => (text && text.length > n ? `${text.slice(0, n - 1)}…` : text || "");
