// Untrusted text made safe to show: what an approver sees is what runs. An agent's text, a tool's args and
// output, a server's error can hold characters drawn as something else: control characters, bidi controls
// (`docs/\u202eetadpu\u202c` is drawn as "docs/update") and invisible ones (zero-width spaces and joiners,
// other format characters, variation selectors, tags). Each is shown as a visible escape instead, as the
// command line shows it (riverbeam_local/display.py): `\x1b` for C0 and DEL, `\u202e` for the rest
// (`\U000e0041` beyond the BMP); in JSON, JSON's own escape, so the JSON shown parses to the same value.
// The page writes text with textContent only, never as HTML.

// control, format, surrogate, line and paragraph separators; variation selectors, the combining grapheme
// joiner, the Hangul and Khmer fillers
const HIDDEN = /[\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}\u034f\u115f\u1160\u17b4\u17b5\u3164\ufe00-\ufe0f\uffa0\u{e0100}-\u{e01ef}]/gu;
const SHORT = { "\n": "\\n", "\t": "\\t", "\r": "\\r" };
const LAYOUT = new Set(["\n", "\t"]);
// the layout JSON always escapes in its familiar way: no reason for a warning
const UNREMARKABLE = new Set(["\n", "\t", "\r"]);
const MAX_NAMED = 5;

const hex = (code, width) => code.toString(16).padStart(width, "0");

export function escape(char) {
  if (char in SHORT) return SHORT[char];
  const code = char.codePointAt(0);
  if (code < 0x20 || code === 0x7f) return `\\x${hex(code, 2)}`;
  return code <= 0xffff ? `\\u${hex(code, 4)}` : `\\U${hex(code, 8)}`;
}

// `text` with every hidden character escaped; with `lines`, newlines and tabs are kept
export function visible(text, { lines = false } = {}) {
  return String(text ?? "").replace(HIDDEN, (char) => (lines && LAYOUT.has(char) ? char : escape(char)));
}

// JSON's escape of a character: one \uXXXX, or a surrogate pair beyond the BMP
const jsonEscape = (char) => Array.from({ length: char.length }, (_, i) => `\\u${hex(char.charCodeAt(i), 4)}`).join("");

// `value` as JSON with every hidden character escaped: valid JSON of the same value (JSON.stringify escapes
// C0 and lone surrogates itself, and writes only ASCII outside its strings)
export function visibleJson(value, indent) {
  const text = JSON.stringify(value, null, indent) ?? "null";
  return text.replace(HIDDEN, (char) => (char === "\n" ? char : jsonEscape(char)));
}

function strings(value) {
  if (typeof value === "string") return [value];
  if (Array.isArray(value)) return value.flatMap(strings);
  if (value && typeof value === "object") return Object.entries(value).flatMap(([key, item]) => [key, ...strings(item)]);
  return [];
}

// the remarkable hidden characters of `value`'s strings (keys too, at any depth), each once
export function hiddenIn(value) {
  const found = new Set();
  for (const text of strings(value)) {
    for (const [char] of text.matchAll(HIDDEN)) if (!UNREMARKABLE.has(char)) found.add(char);
  }
  return [...found];
}

const codePoint = (char) => `U+${hex(char.codePointAt(0), 4).toUpperCase()}`;

// what an approver is told when `args` hold characters that are not what they seem, or null
export function hiddenWarning(args) {
  const found = hiddenIn(args);
  if (!found.length) return null;
  const named = found.slice(0, MAX_NAMED).map(codePoint).join(", ");
  const more = found.length > MAX_NAMED ? ` and ${found.length - MAX_NAMED} more` : "";
  return `The args hold invisible or bidi characters, shown as \\u escapes: ${named}${more}.`;
}
