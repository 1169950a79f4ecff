/**
 * What JSON.stringify leaves as itself but a terminal acts on or hides: DEL, the C1 controls (U+009B is CSI), line
 * separators, the bidirectional embedding, override and isolate characters (they reorder the rest of the line).
 */
const UNSAFE_IN_JSON = /[\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g

/**
 * JSON for a terminal: `JSON.stringify` escapes the C0 controls (so ESC prints as \u001b) but writes DEL, the C1
 * controls and U+2028/2029 as they are — a webhook body carrying U+009B could still steer the reader's terminal.
 * Those are written as `\uXXXX` escapes, which read back as the same JSON.
 */
export function terminalJson(value: unknown, indent?: number): string {
  return terminalJsonText(JSON.stringify(value, null, indent))
}

/** JSON text as it was written (a stored body), for a terminal: the same characters written as escapes, inside its strings. */
export function terminalJsonText(text: string): string {
  return text.replace(UNSAFE_IN_JSON, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
}
