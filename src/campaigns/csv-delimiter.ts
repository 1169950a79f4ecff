/**
 * The delimiter a CSV's header line uses: the most frequent of `,` `;` and tab outside quotes; `,` when there is none.
 * Excel writes `;` where the decimal mark is a comma, and its "Unicode Text" export is tab-separated. A tie goes to
 * tab (header names hold commas, "Name, First", far more often than tabs), then `,`.
 */
export function headerDelimiter(line: string): string {
  const counts = new Map([['\t', 0], [',', 0], [';', 0]])
  let quoted = false
  for (const ch of line) {
    if (ch === '"') quoted = !quoted
    else if (!quoted && counts.has(ch)) counts.set(ch, counts.get(ch)! + 1)
  }
  const most = Math.max(...counts.values())
  // In order of preference (the map's order): the first with the most.
  for (const [delimiter, count] of counts) if (count > 0 && count === most) return delimiter
  return ','
}

/**
 * The delimiter of a file whose first column is a phone number, header or not (a do-not-call list): the first of
 * `,` `;` and tab on its first line, outside quotes — a number holds none of them, whatever the second column's
 * free text does ("asked us to stop; twice"). `,` when there is none.
 */
export function firstDelimiter(line: string): string {
  let quoted = false
  for (const ch of line) {
    if (ch === '"') quoted = !quoted
    else if (!quoted && (ch === ',' || ch === ';' || ch === '\t')) return ch
  }
  return ','
}
