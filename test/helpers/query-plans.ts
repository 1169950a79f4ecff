import type BetterSqlite3 from 'better-sqlite3'
import { vi } from 'vitest'

/**
 * The text of every statement `sqlite` prepares until `stop()`: kysely's statements are prepared once and cached, so
 * this catches each the first time the code under test runs it — for tests that then check how SQLite reads it.
 */
export function capturePrepared(sqlite: BetterSqlite3.Database): { texts: string[]; stop(): void } {
  const texts: string[] = []
  const prepare = sqlite.prepare.bind(sqlite)
  const spy = vi.spyOn(sqlite, 'prepare').mockImplementation((text: string) => {
    texts.push(text)
    return prepare(text)
  })
  return { texts, stop: () => spy.mockRestore() }
}

/** SQLite's plan for `text` (EXPLAIN QUERY PLAN), one line per step, each `?` bound to `parameter`. */
export function queryPlan(sqlite: BetterSqlite3.Database, text: string, parameter: unknown = null): string[] {
  const parameters = Array.from(text.matchAll(/\?/g), () => parameter)
  return (sqlite.prepare(`explain query plan ${text}`).all(...parameters) as Array<{ detail: string }>).map((p) => p.detail)
}
