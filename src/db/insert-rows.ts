import { CompiledQuery, type Insertable, type Kysely, type Selectable } from 'kysely'
import type { Dialect } from './connect.ts'
import type { Database } from './schema.ts'

type Table = keyof Database & string
type Column<T extends Table> = keyof Database[T] & string
type Returned<T extends Table> = keyof Selectable<Database[T]> & string

export interface InsertRowsOptions<T extends Table, R extends Returned<T>> {
  /**
   * ON CONFLICT (columns) DO NOTHING, or — with `update` — DO UPDATE SET each listed column to the value the
   * conflicting row brought (`excluded`).
   */
  onConflict?: { columns: readonly Column<T>[]; update?: readonly Column<T>[] }
  returning?: readonly R[]
}

/** SQL texts by dialect, table, columns, row count and tail: a few dozen in a running service. */
const texts = new Map<string, string>()
const MAX_TEXTS = 256

const quote = (name: string) => `"${name.replaceAll('"', '""')}"`

/**
 * A multi-row INSERT of `rows`, each bound as `columns` in order, its SQL text built once per shape and reused.
 * kysely's insert builder makes an operation node per value and compiles them all again for every statement —
 * 2–3 µs a row of twenty columns, about 8 % of the processing thread's time in a drain (its hottest inserts go
 * through here). Every row must have every column (`undefined` is bound as NULL, not the column's default).
 * Table and column names are trusted identifiers from the typed schema, never input.
 */
export async function insertRows<T extends Table, R extends Returned<T> = never>(
  db: Kysely<Database>,
  dialect: Dialect,
  table: T,
  columns: readonly Column<T>[],
  rows: ReadonlyArray<Insertable<Database[T]>>,
  options: InsertRowsOptions<T, R> = {},
): Promise<Array<Pick<Selectable<Database[T]>, R>>> {
  if (rows.length === 0) return []
  const key = `${dialect}|${table}|${columns.join(',')}|${rows.length}|${options.onConflict?.columns.join(',') ?? ''}|${options.onConflict?.update?.join(',') ?? ''}|${options.returning?.join(',') ?? ''}`
  let text = texts.get(key)
  if (text === undefined) {
    text = insertText(dialect, table, columns, rows.length, options)
    if (texts.size >= MAX_TEXTS) texts.clear()
    texts.set(key, text)
  }
  const parameters: unknown[] = new Array(rows.length * columns.length)
  let at = 0
  for (const row of rows) {
    const values = row as Record<string, unknown>
    for (const column of columns) parameters[at++] = values[column] ?? null
  }
  const result = await db.executeQuery<Pick<Selectable<Database[T]>, R>>(CompiledQuery.raw(text, parameters))
  return result.rows
}

function insertText<T extends Table>(dialect: Dialect, table: T, columns: readonly string[], count: number, options: InsertRowsOptions<T, Returned<T>>): string {
  let n = 0
  const placeholder = dialect === 'postgres' ? () => `$${++n}` : () => '?'
  const tuples: string[] = []
  for (let r = 0; r < count; r++) tuples.push(`(${columns.map(placeholder).join(', ')})`)
  let text = `insert into ${quote(table)} (${columns.map(quote).join(', ')}) values ${tuples.join(', ')}`
  const conflict = options.onConflict
  if (conflict) {
    text += ` on conflict (${conflict.columns.map(quote).join(', ')})`
    text += conflict.update?.length ? ` do update set ${conflict.update.map((c) => `${quote(c)} = excluded.${quote(c)}`).join(', ')}` : ' do nothing'
  }
  if (options.returning?.length) text += ` returning ${options.returning.map(quote).join(', ')}`
  return text
}
