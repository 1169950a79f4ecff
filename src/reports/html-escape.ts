const MAP: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }

/**
 * Control characters (C0 but tab, line feed and carriage return; DEL; C1) and the bidirectional embedding, override and
 * isolate characters (U+202A–U+202E, U+2066–U+2069). A recipe's summary or a webhook's field holding them put raw NUL
 * and ESC bytes into the dashboard and the report's mail, and an unmatched right-to-left override reversed the text
 * after it.
 */
const UNSHOWN = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g

/** A character written as its escape (`\u001b`): seen, and inert. Every character this is given is in the BMP. */
export function visibleEscape(c: string): string {
  return `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`
}

/**
 * Each character of UNSHOWN as its escape. One rule for every place data is shown: the HTML here, and the report
 * mail's text part (src/reports/shown-label.ts).
 */
export function showUnshown(value: string): string {
  return value.replace(UNSHOWN, visibleEscape)
}

/**
 * Text into HTML text or attribute values. Everything from the data passes through here: the dashboard's pages and
 * the daily report's mail. Each character of UNSHOWN is written as its escape (`\u001b`, `\u202e`): seen, and inert.
 */
export function escapeHtml(value: string | number): string {
  return showUnshown(String(value)).replace(/[&<>"']/g, (c) => MAP[c]!)
}
