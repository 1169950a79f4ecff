/**
 * Spreadsheets run a cell that starts with `=`, `+`, `-` or `@` as a formula (and tab / CR prefixes can
 * smuggle one past a trim). Such cells get a leading `'`, which spreadsheets show as text (OWASP "CSV
 * injection"). The CSV then carries `'+919…` for phone numbers: the price of being safe to open.
 */
const FORMULA_START = /^[=+\-@\t\r]/

export function neutraliseCell(value: string): string {
  return FORMULA_START.test(value) ? `'${value}` : value
}
