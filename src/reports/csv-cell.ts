/** A cell holding any of these must be quoted to read back as one cell (RFC 4180). */
const MUST_QUOTE = /[",\r\n]/

/**
 * One CSV cell as csv-stringify writes it with its defaults (delimiter `,`, quote `"` doubled inside,
 * quoted when it holds a delimiter, a quote or a line break), except that a lone LF or CR is quoted too:
 * with CRLF records csv-stringify leaves `a\nb` bare, and a spreadsheet then starts a new row there.
 * Inlined for the report's 100,000-row export: csv-stringify allocates several arrays and objects per cell
 * for options this export never uses, and that bookkeeping, not the text, was most of its render time.
 */
export function csvCell(value: string): string {
  return MUST_QUOTE.test(value) ? `"${value.replaceAll('"', '""')}"` : value
}
