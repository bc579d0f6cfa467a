// Building DOM nodes from data without ever parsing it as HTML: text goes in through textContent
// (text nodes), attributes through setAttribute, so tool output shows as the characters it is.

/**
 * Creates an element. `props`: `class`, `data-*`, `title`, `on:click` (a listener) and other
 * attributes; children: nodes, strings (as text), numbers, or null/undefined/false (skipped), nested arrays.
 */
export function h(tag, props = {}, ...children) {
  const element = document.createElement(tag);
  for (const [key, value] of Object.entries(props ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith('on:')) element.addEventListener(key.slice(3), value);
    else element.setAttribute(key, String(value));
  }
  append(element, children);
  return element;
}

function append(element, children) {
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    if (Array.isArray(child)) append(element, child);
    else if (child instanceof Node) element.appendChild(child);
    else element.appendChild(document.createTextNode(String(child)));
  }
}

/** An SVG element (for the workflow graph's edges). */
export function svg(tag, attributes = {}) {
  const element = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [key, value] of Object.entries(attributes)) element.setAttribute(key, String(value));
  return element;
}

/** "12 ms", "3.4 s". */
export function duration(ms) {
  if (typeof ms !== 'number') return '';
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}

/** A time as HH:MM:SS (local), from epoch ms or an ISO string. */
export function clock(value) {
  if (value === undefined || value === null || value === '') return '';
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? String(value) : date.toLocaleTimeString();
}

/** Any value as display text: strings as they are, the rest as indented JSON. */
export function text(value) {
  if (typeof value === 'string') return value;
  try {
    return JSON.stringify(value, null, 2);
  } catch {
    return String(value);
  }
}
