/**
 * Spreadsheets run a cell that starts with `=`, `+`, `-` or `@` as a formula, and tab / CR prefixes can
 * smuggle one past a trim; Apple Numbers also normalises the full-width forms (＝ ＋ － ＠). Such cells get a
 * leading `'`, which spreadsheets show as text (OWASP "CSV injection"; csv-stringify's `escape_formulas`
 * uses the same set). The CSV then carries `'+919…` for phone numbers: the price of being safe to open.
 */
const FORMULA_START = /^[=+\-@\t\r\uFF1D\uFF0B\uFF0D\uFF20]/

export function neutraliseCell(value: string): string {
  return FORMULA_START.test(value) ? `'${value}` : value
}
