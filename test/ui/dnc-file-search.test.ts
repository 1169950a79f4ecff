import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { H3 } from 'h3'
import { afterEach, expect, it } from 'vitest'
import { addToDnc, isBlocked } from '../../src/campaigns/dnc.ts'
import { createApp } from '../../src/server.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { TOKEN } from './helpers.ts'

/**
 * The do-not-call list is the `dnc` table plus `$DATA_DIR/dnc.csv`. The Mail page's search answers "is this number
 * listed?": a number only the file lists is listed (by the file, and removed only by editing it), and a page whose
 * table is empty does not call the list empty while the file holds numbers.
 */
let rt: TestRuntime | undefined
afterEach(async () => {
  await rt?.close()
  rt = undefined
})

async function mailPage(app: H3, q?: string): Promise<string> {
  const path = q === undefined ? '/ui/mail' : `/ui/mail?${new URLSearchParams({ q })}`
  const res = await app.fetch(new Request(`http://localhost${path}`, { headers: { authorization: `Bearer ${TOKEN}` } }))
  expect(res.status, path).toBe(200)
  return res.text()
}

/** The rows of the do-not-call table, as text, or [] when the page shows none. */
function dncRows(page: string): string[] {
  const region = /<div class="table-wrap" role="region" aria-label="Do-not-call numbers"[\s\S]*?<\/table><\/div>/.exec(page)?.[0] ?? ''
  return [...region.matchAll(/<tr><td>([\s\S]*?)<\/tr>/g)].map((m) => m[1]!.replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ').trim())
}

it('a number only dnc.csv lists is found by the search, as listed by the file, with no Remove', async () => {
  rt = await createTestRuntime({ env: { ADMIN_TOKEN: TOKEN, DEFAULT_COUNTRY: 'IN' } })
  writeFileSync(join(rt.dataDir, 'dnc.csv'), 'phone\n+919876543213\n09876543214\n')
  const app = createApp(rt)
  expect(await isBlocked(rt, '+919876543213')).toBe(true)

  for (const typed of ['+919876543213', '+91 98765 43213', '09876543213']) {
    const page = await mailPage(app, typed)
    expect(page, typed).not.toContain('No number matches')
    const rows = dncRows(page)
    expect(rows, typed).toHaveLength(1)
    expect(rows[0], typed).toContain('+919876543213')
    expect(rows[0], typed).toContain('dnc.csv')
    expect(rows[0], typed).not.toContain('Remove')
  }
  // Part of a number matches the file's numbers holding those digits, as it does the table's.
  expect(dncRows(await mailPage(app, '9876543')).map((r) => r.split(' ')[0]).sort()).toEqual(['+919876543213', '+919876543214'])
  // A number on neither is not listed.
  expect(await mailPage(app, '+919876543215')).toContain('No number matches')

  const all = await mailPage(app)
  expect(all).not.toContain('The list is empty')
  expect(all).toMatch(/dnc\.csv<\/code> lists 2 numbers too/)
})

it('a number in both the table and the file shows the table entry, saying the file also lists it', async () => {
  rt = await createTestRuntime({ env: { ADMIN_TOKEN: TOKEN, DEFAULT_COUNTRY: 'IN' } })
  writeFileSync(join(rt.dataDir, 'dnc.csv'), '+919876543213\n')
  await addToDnc(rt, '+919876543213', { reason: 'asked', source: 'dashboard' })
  const rows = dncRows(await mailPage(createApp(rt), '+919876543213'))
  expect(rows).toHaveLength(1)
  expect(rows[0]).toContain('asked')
  expect(rows[0]).toContain('Remove')
  expect(rows[0]).toContain('dnc.csv')
})

it('with no file and an empty table the list is empty', async () => {
  rt = await createTestRuntime({ env: { ADMIN_TOKEN: TOKEN } })
  const page = await mailPage(createApp(rt))
  expect(page).toContain('The list is empty.')
  expect(page).not.toContain('dnc.csv')
})
