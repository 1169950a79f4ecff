import { sql, type Expression, type RawBuilder, type SqlBool } from 'kysely'
import type { Dialect } from './connect.ts'

/**
 * `column IN (due)` for an UPDATE that claims the rows a sub-select picks (ORDER BY … LIMIT n, FOR UPDATE SKIP
 * LOCKED on Postgres). On Postgres the sub-select goes inside `= ANY(ARRAY(…))`, which runs it once. As a plain
 * IN the planner may make it the inner side of a nested-loop semi-join and run it again for every row of the
 * table it updates — it does on a table without statistics yet — and where rows tie on the ORDER BY (a burst's
 * rows share their due time) each run can lock a different n of them: an UPDATE with LIMIT 400 claimed 450 rows,
 * and batches, concurrency caps and recipe batch sizes went past their limits. SQLite runs an IN sub-select once.
 * `column` is a trusted identifier, never input.
 */
export function inClaimSubquery(dialect: Dialect, column: string, due: Expression<unknown>): RawBuilder<SqlBool> {
  if (dialect === 'postgres') return sql<SqlBool>`${sql.ref(column)} = any(array(${due}))`
  return sql<SqlBool>`${sql.ref(column)} in ${due}`
}
