import { afterAll, beforeAll, expect, it } from 'vitest'
import type { H3 } from 'h3'
import { createApp } from '../../src/server.ts'
import { createManualClock } from '../../src/utils/clock.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { TOKEN } from './helpers.ts'

/**
 * A filter the pages cannot take is a 400 whose message names the parameter and what it takes ("Invalid input" and
 * "Too big: expected string to have <=200 characters" named neither); a day that does not exist is refused, not rolled
 * over to another; a range whose start is after its end says so rather than "No event matches". The campaigns and
 * mail pages fall back to their default day on purpose, and now say they did.
 */
describeEachDialect('bad query parameters on the dashboard', (dialect) => {
  let rt: TestRuntime
  let app: H3
  beforeAll(async () => {
    rt = await createTestRuntime({ dialect, clock: createManualClock('2026-03-02T06:00:00Z'), env: { ADMIN_TOKEN: TOKEN, RECIPES_TIMEZONE: 'Asia/Kolkata' } })
    app = createApp(rt)
  })
  afterAll(() => rt.close())

  const get = (path: string) => app.fetch(new Request(`http://localhost${path}`, { headers: { authorization: `Bearer ${TOKEN}` } }))
  const alert = (page: string) => /<p class="flash error" role="alert">([\s\S]*?)<\/p>/.exec(page)?.[1]

  it.each([
    ['/ui/events?status=bogus', 'status must be one of pending, processed, failed, dead (or empty for any)'],
    ['/ui/calls?status=bogus', 'status must be one of queued, pending, initiated, scheduled, failed, rejected (or empty for any)'],
    [`/ui/events?type=${'x'.repeat(1_001)}`, 'type must be at most 1000 characters'],
    [`/ui/events?phone=${'1'.repeat(1_001)}`, 'phone must be at most 1000 characters'],
    [`/ui/calls?recipe=${'r'.repeat(1_001)}`, 'recipe must be at most 1000 characters'],
    ['/ui/destinations?status=bogus', 'status must be one of pending, delivered, dead (or empty for any)'],
    ['/ui/destinations?destination=nope', 'destination: no destination is named &quot;nope&quot; (none is configured or has deliveries kept)'],
    ['/ui/events?from=2026-02-30', 'from must be a date that exists, YYYY-MM-DD or YYYY-MM-DDTHH:MM (UTC)'],
    ['/ui/events?to=2026-13-01', 'to must be a date that exists, YYYY-MM-DD or YYYY-MM-DDTHH:MM (UTC)'],
    ['/ui/events?from=2026-03-01T24:00', 'from must be a date that exists, YYYY-MM-DD or YYYY-MM-DDTHH:MM (UTC)'],
    ['/ui/events?to=March%207', 'to must be a date that exists, YYYY-MM-DD or YYYY-MM-DDTHH:MM (UTC)'],
    ['/ui/events?from=2026-12-05&to=2026-12-01', 'from (2026-12-05) is after to (2026-12-01): no event can match; swap them'],
    ['/ui/events?from=2026-12-01T10:00&to=2026-12-01T10:00', 'from (2026-12-01T10:00) must be before to (2026-12-01T10:00)'],
  ])('%s is a 400 naming the parameter', async (path, message) => {
    const res = await get(path)
    expect(res.status).toBe(400)
    expect(alert(await res.text())).toBe(message)
  })

  it('real days, one day from and to, and empty filters are taken', async () => {
    for (const path of ['/ui/events?from=2026-02-28&to=2026-02-28', '/ui/events?from=2028-02-29', '/ui/events?from=2026-03-01T09:30&to=2026-03-01T10:00', '/ui/events?type=&status=&from=&to=', '/ui/calls?status=&recipe=']) {
      expect((await get(path)).status, path).toBe(200)
    }
  })

  // Links a page writes from an event's own values: ids the receiver stores are up to 255 characters (a 200-character
  // limit made the page's own Conversation and Trace links a 400), and a cursor past such an event is longer still.
  it('the filters take every id the receiver stores, and a cursor naming one', async () => {
    const long = 'c'.repeat(255)
    const cursor = Buffer.from(`1772431200000:${'é'.repeat(255)}`).toString('base64url')
    for (const path of [`/ui/events?conversation_id=${long}`, `/ui/events?trace_id=${long}`, `/ui/events?after=${cursor}`, `/ui/calls?chain=${long}`]) {
      expect((await get(path)).status, path.slice(0, 40)).toBe(200)
    }
  })

  // A cursor the page did not make starts from the top: one whose time no Date holds was a 500 (the page shows it).
  it("the calls page's cursor with a time past any date starts from the top", async () => {
    const cursor = Buffer.from(JSON.stringify([8_640_000_000_000_001, 'x'])).toString('base64url')
    const res = await get(`/ui/calls?before=${cursor}`)
    expect(res.status).toBe(200)
    expect(await res.text()).not.toContain('older than the previous page')
  })

  // Date.UTC reads years 0–99 as 1900–1999: a day of year 100 gave a trend reaching back into "1999" (a 500), and
  // years 1–99 were refused although the message said they are taken.
  it('days of the first centuries are days like any other', async () => {
    for (const date of ['0001-01-01', '0099-12-31', '0100-01-01']) {
      for (const path of [`/ui/campaigns?date=${date}`, `/ui/mail/preview?date=${date}`]) {
        const res = await get(path)
        expect(res.status, path).toBe(200)
        expect(await res.text(), path).not.toContain('not a calendar day')
      }
    }
  })

  it('the campaigns and mail pages say a day they did not understand, and which day they show instead', async () => {
    // 2026-03-02 06:00 UTC is 11:30 that day in Kolkata.
    for (const date of ['garbage', '2026-02-30', '9999-12-31', '0000-12-31']) {
      const campaigns = await (await get(`/ui/campaigns?date=${date}`)).text()
      expect(campaigns, date).toContain('The day in the link is not a calendar day (YYYY-MM-DD, years 0001–9998): showing 2026-03-02, today in Asia/Kolkata, instead.')
      const mail = await (await get(`/ui/mail?date=${date}`)).text()
      expect(mail, date).toContain('The day in the link is not a calendar day (YYYY-MM-DD, years 0001–9998): showing 2026-03-01, yesterday in Asia/Kolkata, instead.')
      expect(mail, date).not.toContain(date)
    }
    for (const path of ['/ui/campaigns', '/ui/campaigns?date=2026-02-28', '/ui/mail', '/ui/mail?date=', '/ui/mail?date=2026-02-28']) {
      expect(await (await get(path)).text(), path).not.toContain('not a calendar day')
    }
  })
})
