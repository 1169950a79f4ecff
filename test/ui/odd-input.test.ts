import { afterAll, beforeAll, expect, it } from 'vitest'
import type { H3 } from 'h3'
import { createApp } from '../../src/server.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { TOKEN } from './helpers.ts'

/**
 * Input the dashboard and /admin never produce — a NUL character, a cursor it did not make, a day that is not one —
 * is the client's mistake (a 4xx, or the default view), never a failed query (500). Postgres refuses NUL in text and
 * fractional or huge numbers for a bigint, where SQLite answered, so both databases run it.
 */
describeEachDialect('odd input on the dashboard and /admin', (dialect) => {
  let rt: TestRuntime
  let app: H3
  beforeAll(async () => {
    rt = await createTestRuntime({ dialect, env: { ADMIN_TOKEN: TOKEN } })
    app = createApp(rt)
  })
  afterAll(() => rt.close())

  const get = (path: string) => app.fetch(new Request(`http://localhost${path}`, { headers: { authorization: `Bearer ${TOKEN}` } }))
  const cursor = (text: string) => Buffer.from(text).toString('base64url')

  it('a NUL character in a path or a filter is a 400; a cursor the page did not make starts from the top', async () => {
    for (const path of [
      '/ui/events?trace_id=%00',
      '/ui/events/%00',
      '/ui/calls?recipe=%00',
      '/ui/calls?chain=a%00b',
      '/ui/destinations?destination=%00',
      '/ui/mail?q=%00',
      '/ui/recipes/x/runs/%00',
      '/admin/events?type=%00',
      '/admin/events/%00',
      '/admin/destinations/deliveries?destination=%00',
      '/admin/destinations/deliveries/%00',
      '/admin/recipes/%00/runs',
    ]) {
      const res = await get(path)
      expect(res.status, path).toBe(400)
      expect(await res.text(), path).toContain('NUL character')
    }
    const form = await app.fetch(
      new Request('http://localhost/ui/dnc/remove', {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/x-www-form-urlencoded' },
        body: 'phone=%2B9198%0076543210',
      }),
    )
    expect(form.status).toBe(400)
    expect(await form.text()).toContain('the form field &quot;phone&quot; has a NUL character')
    for (const after of [cursor('1e21:x'), cursor('1.5:x'), cursor('-5:x'), cursor('5:a\u0000b'), 'not-base64!']) {
      expect((await get(`/ui/events?after=${after}`)).status, after).toBe(200)
    }
  })

  it('a day that is not a calendar day shows the default day, and is a 400 for the report preview', async () => {
    for (const date of ['2026-02-30', '2026-13-01', '9999-12-31', '0000-01-01']) {
      expect((await get(`/ui/campaigns?date=${date}`)).status, date).toBe(200)
      const mail = await get(`/ui/mail?date=${date}`)
      expect(mail.status, date).toBe(200)
      expect(await mail.text(), date).not.toContain(`date=${date}`)
      expect((await get(`/ui/mail/preview?date=${date}`)).status, date).toBe(400)
    }
    expect((await get('/ui/campaigns?date=2026-02-28')).status).toBe(200)
  })

  it('since/until on /admin/destinations are a day or a time with its zone, as the CLI takes them: not "March 7" read as 2001', async () => {
    for (const since of ['March%207', '1', '2026-03-01T00:00', '2026-02-30']) {
      const res = await get(`/admin/destinations/deliveries?since=${since}`)
      expect(res.status, since).toBe(400)
      expect(await res.text(), since).toContain('since must be an ISO day (its UTC midnight) or a time with its zone')
    }
    for (const since of ['2026-03-01', '2026-03-01T00:00:00Z', '2026-03-01T05:30:00%2B05:30']) expect((await get(`/admin/destinations/deliveries?since=${since}`)).status, since).toBe(200)
    const replay = await app.fetch(new Request('http://localhost/admin/destinations/crm/replay', { method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify({ since: 'March 7' }) }))
    expect(replay.status).toBe(400)
  })
})

