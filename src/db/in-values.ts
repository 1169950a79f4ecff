import { sql, type RawBuilder, type SqlBool } from 'kysely'
import type { Dialect } from './connect.ts'

/**
 * `column IN (values)` with the values as one parameter, whatever their number: `json_each` of a JSON array on
 * SQLite, `= ANY` of an array on Postgres. kysely builds an IN list value by value — a node, a placeholder and
 * a parameter each, about a microsecond a value on the outbox's hot path — and every length is a statement
 * text of its own to prepare. `column` is a trusted identifier (a column name, optionally qualified), never input.
 */
export function inValues(dialect: Dialect, column: string, values: readonly (string | number)[]): RawBuilder<SqlBool> {
  return inParameter(dialect, column, encodeValues(dialect, values))
}

/** The values as `inParameter` takes them: a JSON array's text on SQLite, the array itself on Postgres. */
export function encodeValues(dialect: Dialect, values: readonly (string | number)[]): unknown {
  return dialect === 'sqlite' ? JSON.stringify(values) : values
}

/** `column IN (values)` with the values already encoded (`encodeValues`), or a query template's slot for them. */
export function inParameter(dialect: Dialect, column: string, encoded: unknown): RawBuilder<SqlBool> {
  if (dialect === 'sqlite') return sql<SqlBool>`${sql.ref(column)} in (select value from json_each(${encoded}))`
  return sql<SqlBool>`${sql.ref(column)} = any(${encoded})`
}
