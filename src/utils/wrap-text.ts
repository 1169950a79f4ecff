/**
 * Word-wraps `text` to lines of at most `width` characters, each prefixed with `indent` (the first line too,
 * unless `firstIndent` says otherwise). A word longer than a line (a URL, a long flag) gets a line of its own
 * rather than being cut. Existing line breaks are kept.
 */
export function wrapText(text: string, width: number, indent = '', firstIndent = indent): string[] {
  return text.split('\n').flatMap((paragraph, i) => wrapWords(paragraph.split(/\s+/).filter(Boolean), width, indent, i === 0 ? firstIndent : indent))
}

/** A command's usage wrapped between its arguments, never inside one: "[--csv file.csv]" stays on one line. */
export function wrapUsage(usage: string, width: number, indent: string, firstIndent = ''): string[] {
  const words: string[] = []
  let depth = 0
  let word = ''
  for (const ch of usage) {
    if (ch === '[' || ch === '<') depth++
    if (ch === ']' || ch === '>') depth = Math.max(0, depth - 1)
    if (/\s/.test(ch) && depth === 0) {
      if (word) words.push(word)
      word = ''
    } else word += /\s/.test(ch) ? ' ' : ch
  }
  if (word) words.push(word)
  return wrapWords(words, width, indent, firstIndent)
}

function wrapWords(words: string[], width: number, indent: string, firstIndent: string): string[] {
  const lines: string[] = []
  let line = ''
  let prefix = firstIndent
  for (const word of words) {
    if (line && prefix.length + line.length + 1 + word.length > width) {
      lines.push((prefix + line).trimEnd())
      prefix = indent
      line = word
    } else line = line ? `${line} ${word}` : word
  }
  lines.push((prefix + line).trimEnd())
  return lines
}

/**
 * The width to lay help text out for: the terminal's when stdout is one (within 60–100 columns, beyond which
 * lines get hard to read), else 80.
 */
export function helpWidth(columns: number | undefined): number {
  return Math.min(100, Math.max(60, columns ?? 80))
}
