/** Longest SQL text a log line carries. */
const MAX_CHARS = 1_000

/**
 * A statement's SQL for a log line: runs of placeholders (an IN list of 200 ids, a multi-row insert) folded to
 * one, and the whole cut at 1,000 characters. Compiled SQL carries placeholders, never values.
 */
export function shortSql(sql: string): string {
  const folded = sql
    .replace(/\s+/g, ' ')
    // Postgres numbers its placeholders ($1, $2, …), SQLite does not (?): the same statement reads the same.
    .replace(/\$\d+/g, '?')
    .replace(/\?(?:, \?){2,}/g, '?, …')
    .replace(/(\([^()]*\))(?:, \1){2,}/g, '$1, …')
  return folded.length > MAX_CHARS ? `${folded.slice(0, MAX_CHARS - 1)}…` : folded
}
