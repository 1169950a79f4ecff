import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { envSchema } from '../../src/config/schema.ts'

const ROOT = join(import.meta.dirname, '../..')

/** The README's configuration table: key → its default cell ("`3000`", "unset → **sandbox mode**", …). */
function readmeTable(): Map<string, string> {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8')
  const section = readme.slice(readme.indexOf('## Configuration'), readme.indexOf('\n## ', readme.indexOf('## Configuration') + 5))
  const table = new Map<string, string>()
  for (const row of section.split('\n').filter((l) => /^\| `[A-Z_]+`/.test(l))) {
    const [keys, defaults] = row.slice(2).split(' | ')
    const names = [...keys!.matchAll(/`([A-Z_]+)`/g)].map((m) => m[1]!)
    // "`PORT`, `HOST` | `3000`, `127.0.0.1`": one default per key, in order.
    const cells = names.length > 1 ? defaults!.split(/,\s*/) : [defaults!]
    names.forEach((name, i) => table.set(name, cells[i]!.trim()))
  }
  return table
}

describe('the README documents every configuration key', () => {
  const table = readmeTable()
  const schema = envSchema.shape as Record<string, { safeParse(value: unknown): { success: boolean; data?: unknown } }>

  it('each key of the schema has a row in the Configuration table', () => {
    const missing = Object.keys(schema).filter((key) => !table.has(key))
    expect(missing).toEqual([])
  })

  it('a row does not name a key the schema does not have', () => {
    // SWITCHBOARD_CONFIG names the config file itself, so only the environment can set it.
    expect([...table.keys()].filter((key) => !(key in schema) && key !== 'SWITCHBOARD_CONFIG')).toEqual([])
  })

  it('where the table gives a plain default, it is the schema\'s', () => {
    let compared = 0
    for (const [key, cell] of table) {
      const shown = /^`([^`]+)`/.exec(cell)?.[1]
      if (!schema[key]) continue
      const parsed = schema[key].safeParse(undefined)
      const value = parsed.success ? parsed.data : undefined
      if (shown === undefined || !['string', 'number', 'boolean'].includes(typeof value)) continue
      expect(shown, key).toBe(String(value))
      compared++
    }
    // Most keys have a plain default: a table whose format changed would compare none.
    expect(compared).toBeGreaterThan(25)
  })
})
