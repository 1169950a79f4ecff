/**
 * Control characters (C0, DEL, C1), line/paragraph separators, the bidirectional embedding, override and isolate
 * characters (U+202A–U+202E, U+2066–U+2069: a U+202E in a webhook's id reversed the rest of the terminal's line, as the
 * dashboard's escapes keep it from doing — src/reports/html-escape.ts), replacement characters and lone surrogates.
 */
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufffd]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g

/**
 * Text from a file or a client made safe for one line of a terminal or a log: anything that could move the
 * cursor, ring the bell, start an escape sequence or hide bytes is shown as `\xNN`/`\uNNNN`, and long text
 * is cut. Used wherever an error quotes what it read (a CSV header of a binary file, say).
 */
export function printable(text: string, max = 200): string {
  const cut = text.length > max ? `${text.slice(0, max)}…` : text
  return cut.replace(UNPRINTABLE, (c) => {
    const code = c.charCodeAt(0)
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`
  })
}

/**
 * Lines for a terminal, each made `printable` whole (not cut): a plan's rows, a run's error and summary quote what a
 * CSV or a webhook carried, and a newline inside one of them would forge a line of its own.
 */
export function printableLines(lines: string[]): string {
  return lines.map((line) => printable(line, Infinity)).join('\n') + '\n'
}
