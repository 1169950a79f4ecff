import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { H3 } from 'h3'
import { afterEach, expect, it } from 'vitest'
import { addToDnc, listDnc } from '../../src/campaigns/dnc.ts'
import { createApp } from '../../src/server.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { TOKEN, redirectedTo } from './helpers.ts'

let rt: TestRuntime | undefined
afterEach(async () => {
  await rt?.close()
  rt = undefined
})

const request = (app: H3, path: string, init: RequestInit = {}) =>
  app.fetch(new Request(`http://localhost${path}`, { ...init, headers: { authorization: `Bearer ${TOKEN}`, ...init.headers } }))

async function mailPage(app: H3, path: string): Promise<string> {
  const res = await request(app, path)
  expect(res.status, path).toBe(200)
  return res.text()
}

/** The numbers in the do-not-call table's rows. */
function listed(page: string): string[] {
  const region = /<div class="table-wrap" role="region" aria-label="Do-not-call numbers"[\s\S]*?<\/table><\/div>/.exec(page)?.[0] ?? ''
  return [...region.matchAll(/<tr><td>([^<]*)<\/td>/g)].map((m) => m[1]!)
}

const flashOf = (page: string) => /<p class="flash" role="status">([\s\S]*?)<\/p>/.exec(page)?.[1] ?? null

// Every number is digits: a search without one (letters, dashes, markup) read as "no search" and listed every number,
// in the table and the dnc.csv file alike, as if each matched.
it('a search with no digit matches no number, and says to type some digits', async () => {
  rt = await createTestRuntime({ env: { ADMIN_TOKEN: TOKEN, DEFAULT_COUNTRY: 'IN' } })
  writeFileSync(join(rt.dataDir, 'dnc.csv'), '+919876543213\n')
  await addToDnc(rt, '+919876543210', { reason: 'asked', source: 'dashboard' })
  await addToDnc(rt, '+919876543211', { reason: 'asked', source: 'dashboard' })
  const app = createApp(rt)
  expect(listed(await mailPage(app, '/ui/mail')).sort()).toEqual(['+919876543210', '+919876543211'])
  for (const q of ['abc', 'zzz', '--', '<script>', ' + ']) {
    const page = await mailPage(app, `/ui/mail?${new URLSearchParams({ q })}`)
    expect(listed(page), q).toEqual([])
    expect(page, q).not.toContain('+919876543213')
    expect(page, q).toContain('type some digits of the number')
  }
  expect(await listDnc(rt, { search: 'abc' })).toEqual([])
  // Digits still find the numbers holding them; no search lists them all.
  expect(listed(await mailPage(app, '/ui/mail?q=543211'))).toEqual(['+919876543211'])
  expect(await mailPage(app, '/ui/mail?q=543211')).not.toContain('type some digits')
})

// The import's result was the POST's own page: reloading it posted the file again. It answers 303 to the mail page,
// whose notice carries the counts as numbers; the bad rows (the file's text) come from the service, never the link.
it('a CSV import answers 303 with its counts in the notice; reloading shows them again and imports nothing', async () => {
  rt = await createTestRuntime({ env: { ADMIN_TOKEN: TOKEN, DEFAULT_COUNTRY: 'IN' } })
  await addToDnc(rt, '+919876543210', { reason: 'asked', source: 'dashboard' })
  const app = createApp(rt)
  const form = new FormData()
  form.set('file', new File(['phone,reason\n+919876543210,asked\n98765 43219,complaint\nnot-a-number,oops\n'], 'dnc.csv', { type: 'text/csv' }))
  const res = await request(app, '/ui/dnc/import', { method: 'POST', body: form })
  expect(res.status).toBe(303)
  const location = redirectedTo(res, '/ui/dnc/import')!
  const url = new URL(location, 'http://localhost')
  expect(url.pathname).toBe('/ui/mail')
  expect(Object.fromEntries([...url.searchParams].filter(([k]) => k !== 'r'))).toEqual({ done: 'dnc-imported', n: '1', e: '1', x: '1' })

  for (let view = 0; view < 2; view++) {
    const page = await mailPage(app, location)
    expect(flashOf(page)).toBe('Imported: 1 added, 1 already listed, 1 row(s) with errors.')
    const result = /<div id="dnc-import-result"[\s\S]*?<\/table><\/div>/.exec(page)?.[0] ?? ''
    expect(result.replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ')).toContain('4 not-a-number not a phone number')
  }
  expect((await listDnc(rt)).map((d) => d.phone).sort()).toEqual(['+919876543210', '+919876543219'])

  // A link with made-up counts shows numbers only; one naming no kept import shows no rows, and says so.
  const crafted = await mailPage(app, '/ui/mail?done=dnc-imported&n=5&e=%3Cb%3E&x=2&r=nope')
  expect(flashOf(crafted)).toBe('Imported: 5 added, 0 already listed, 2 row(s) with errors.')
  expect(crafted).not.toContain('&lt;b&gt;')
  expect(crafted).toContain('no longer kept')
  expect(crafted).not.toContain('not-a-number')
})

it('an import with no bad rows carries no rows id', async () => {
  rt = await createTestRuntime({ env: { ADMIN_TOKEN: TOKEN, DEFAULT_COUNTRY: 'IN' } })
  const app = createApp(rt)
  const form = new FormData()
  form.set('file', new File(['+919876543210\n'], 'dnc.csv', { type: 'text/csv' }))
  const res = await request(app, '/ui/dnc/import', { method: 'POST', body: form })
  expect(res.status).toBe(303)
  expect(redirectedTo(res, '/ui/dnc/import')).toBe('/ui/mail?done=dnc-imported&n=1&e=0&x=0')
  const page = await mailPage(app, redirectedTo(res, '/ui/dnc/import')!)
  expect(flashOf(page)).toBe('Imported: 1 added, 0 already listed, 0 row(s) with errors.')
  expect(page).not.toContain('dnc-import-result')
})
