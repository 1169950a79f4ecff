/**
 * The delimiter a CSV's header line uses: the most frequent of `,` `;` and tab outside quotes; `,` on a tie or none.
 * Excel writes `;` where the decimal mark is a comma, and its "Unicode Text" export is tab-separated.
 */
export function headerDelimiter(line: string): string {
  const counts = new Map([[',', 0], [';', 0], ['\t', 0]])
  let quoted = false
  for (const ch of line) {
    if (ch === '"') quoted = !quoted
    else if (!quoted && counts.has(ch)) counts.set(ch, counts.get(ch)! + 1)
  }
  let best = ','
  for (const [delimiter, count] of counts) if (count > counts.get(best)!) best = delimiter
  return best
}
