// Small DOM helpers: elements are built with properties and text, never from HTML strings
// (the only HTML that reaches the page is note HTML after sanitize.js).

/** An element: `h('button', {type: 'button', onclick}, 'Save')`. */
export function h(tag, props = {}, ...children) {
  const element = document.createElement(tag);
  for (const [key, value] of Object.entries(props ?? {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith('on') && typeof value === 'function') element.addEventListener(key.slice(2), value);
    else if (key === 'class') element.className = value;
    else if (key === 'dataset') Object.assign(element.dataset, value);
    else if (key in element && typeof value !== 'string') element[key] = value;
    else element.setAttribute(key, value === true ? '' : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    element.append(child instanceof Node ? child : String(child));
  }
  return element;
}

/** Replaces the children of `element`. */
export function replace(element, ...children) {
  element.replaceChildren(...children.flat().filter((c) => c !== null && c !== undefined && c !== false));
}

const minute = 60 * 1000;
const day = 24 * 60 * minute;

/** A time as a person reads it: "just now", "5 min ago", "14:02", "Mon 14:02", "3 Nov 2026". */
export function formatTime(ms, now = Date.now()) {
  const date = new Date(ms);
  const age = now - ms;
  if (age < minute && age > -minute) return 'just now';
  if (age < 60 * minute && age > 0) return `${Math.round(age / minute)} min ago`;
  const time = date.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' });
  const today = new Date(now);
  if (date.toDateString() === today.toDateString()) return time;
  if (age < 6 * day && age > 0) return `${date.toLocaleDateString(undefined, { weekday: 'short' })} ${time}`;
  return date.toLocaleDateString(undefined, { day: 'numeric', month: 'short', year: 'numeric' });
}

/** Calls `fn` at most once per `ms`, with the latest arguments, after the calls stop. */
export function debounce(fn, ms) {
  let timer = null;
  const debounced = (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => { timer = null; fn(...args); }, ms);
  };
  debounced.cancel = () => { clearTimeout(timer); timer = null; };
  debounced.pending = () => timer !== null;
  return debounced;
}

/**
 * Runs `fn` soon after a call, then at most once per `gap()` ms while calls keep coming (the
 * last call always gets a run after it). For re-reading the library during bursts of events.
 */
export function throttle(fn, gap) {
  let timer = null;
  let last = 0;
  let running = false;
  let again = false;
  const run = async () => {
    timer = null;
    if (running) { again = true; return; }
    running = true;
    last = Date.now();
    try { await fn(); } catch { /* the caller reports its own errors */ }
    running = false;
    if (again) { again = false; schedule(); }
  };
  const schedule = () => {
    if (timer) return;
    timer = setTimeout(run, Math.max(50, last + gap() - Date.now()));
  };
  return schedule;
}

/** A message for an error from the API, for the status line or a form. */
export function errorMessage(error) {
  return error?.message ?? String(error);
}
