import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, expect, it } from 'vitest'
import type { H3 } from 'h3'
import { createApp } from '../../src/server.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { launchBrowser } from '../helpers/browser.ts'
import { capturePrepared, queryPlan } from '../helpers/query-plans.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { makeEvent } from '../webhooks/helpers.ts'
import { login, startUiServer, TOKEN, type UiServer } from './helpers.ts'
import { deliver } from './seed.ts'

/**
 * The events page's Type filter offered the provider's seven types only: a stored type outside them (a newer provider
 * type, a named target's) was listed by `?type=` but the select showed "any", so the next submit dropped it, and a
 * named target's events could not be picked at all. It offers the stored types (read by index, never the whole
 * table), keeps the current one, and reads the table's `crm:contact.updated` label as that target's events of that type.
 */
const TARGETS = JSON.stringify({
  crm: { scheme: 'standard', secrets: 'whsec_Y3JtLXNlY3JldC1jcm0tc2VjcmV0LWNybS1zZWNyZXQ=' },
  shop: { scheme: 'standard', secrets: 'whsec_c2hvcC1zZWNyZXQtc2hvcC1zZWNyZXQtc2hvcC1zZWNyZXQ=' },
})

describeEachDialect('events page: the Type filter', (dialect) => {
  let rt: TestRuntime
  let app: H3
  beforeAll(async () => {
    rt = await createTestRuntime({ dialect, env: { ADMIN_TOKEN: TOKEN, WEBHOOK_TARGETS: TARGETS } })
    app = createApp(rt)
    await rt.store.db.insertInto('webhook_events').values([
      row('evt_completed', 'formant', 'call.completed', makeEvent({ event_id: 'evt_completed' })),
      row('evt_voicemail', 'formant', 'call.voicemail', makeEvent({ event_id: 'evt_voicemail' })),
      row('msg_crm', 'crm', 'contact.updated', { type: 'contact.updated', data: { id: 'ct_1' } }),
      row('msg_shop', 'shop', 'contact.updated', { type: 'contact.updated', data: { id: 'ct_2' } }),
    ]).execute()
  })
  afterAll(() => rt.close())
  const row = (id: string, target: string, type: string, body: unknown) => {
    const at = rt.clock.now()
    return {
      event_id: id, target, event_type: type, conversation_id: null, trace_id: null, agent_id: null, body: JSON.stringify(body), headers: '{}',
      source: 'webhook', received_at: at, status: 'processed', attempts: 1, next_attempt_at: at, claimed_by: null, claimed_until: null, last_error: null, processed_at: at,
    }
  }

  const get = async (path: string) => {
    const res = await app.fetch(new Request(`http://localhost${path}`, { headers: { authorization: `Bearer ${TOKEN}` } }))
    expect(res.status, path).toBe(200)
    return res.text()
  }
  const typeSelect = (body: string) => /<select name="type">([\s\S]*?)<\/select>/.exec(body)?.[1] ?? ''
  const options = (body: string) => [...typeSelect(body).matchAll(/<option value="([^"]*)"/g)].map((m) => m[1])
  const selected = (body: string) => /<option value="([^"]*)" selected>/.exec(typeSelect(body))?.[1]
  const rows = (body: string) => [...body.matchAll(/<a href="ui\/events\/([^"]+)"/g)].map((m) => decodeURIComponent(m[1]!))

  it('offers the stored types beside the provider\'s, a named target\'s among them — read by index, never the whole table', async () => {
    // kysely prepares a statement once: caught on the page's first view.
    const prepared = dialect === 'sqlite' ? capturePrepared(rt.store.sqlite!) : undefined
    let body: string
    try {
      body = await get('/ui/events')
    } finally {
      prepared?.stop()
    }
    if (prepared) {
      const types = prepared.texts.find((t) => /with recursive/i.test(t))
      expect(types).toBeDefined()
      const plan = queryPlan(rt.store.sqlite!, types!)
      const reads = plan.filter((l) => /webhook_events|\bw\b/.test(l))
      expect(reads.length).toBeGreaterThan(0)
      for (const line of reads) expect(line).toMatch(/USING (COVERING )?INDEX webhook_events_type_received/)
    }
    expect(options(body)).toEqual(expect.arrayContaining(['', 'call.completed', 'call.voicemail', 'contact.updated']))
    expect(selected(body)).toBe('')
  })

  it('keeps a type it does not otherwise offer selected, so the next submit keeps the filter', async () => {
    const body = await get('/ui/events?type=call.voicemail')
    expect(rows(body)).toEqual(['evt_voicemail'])
    expect(selected(body)).toBe('call.voicemail')
    const never = await get('/ui/events?type=call.never_stored')
    expect(selected(never)).toBe('call.never_stored')
    expect(never).toContain('No event matches.')
  })

  it('reads a named target\'s label (crm:contact.updated), as the table shows it, as that target\'s events of that type, and keeps it', async () => {
    const body = await get('/ui/events?type=crm:contact.updated')
    expect(rows(body)).toEqual(['msg_crm'])
    expect(selected(body)).toBe('crm:contact.updated')
    expect(rows(await get('/ui/events?type=shop:contact.updated'))).toEqual(['msg_shop'])
    // The bare type takes it from any target.
    expect(rows(await get('/ui/events?type=contact.updated')).sort()).toEqual(['msg_crm', 'msg_shop'])
    // A colon that names no target is part of the type.
    expect(rows(await get('/ui/events?type=nosuch:contact.updated'))).toEqual([])
  })

  it('offers at most 50 stored types, first by name; one past them is still kept when it is the filter', async () => {
    await rt.store.db.insertInto('webhook_events').values(Array.from({ length: 60 }, (_, i) => row(`evt_many_${i}`, 'crm', `many.t${String(i).padStart(2, '0')}`, {}))).execute()
    const many = options(await get('/ui/events')).filter((t) => t?.startsWith('many.'))
    // The first 50 stored types by name: call.completed, call.voicemail, contact.updated, many.t00 … many.t46.
    expect(many).toEqual(Array.from({ length: 47 }, (_, i) => `many.t${String(i).padStart(2, '0')}`))
    expect(selected(await get('/ui/events?type=many.t59'))).toBe('many.t59')
  })
})

/** In a browser: changing Status and submitting keeps a type the standard list does not have. */
let ui: UiServer
let browser: Browser
beforeAll(async () => {
  ui = await startUiServer({ ADMIN_TOKEN: TOKEN })
  const at = ui.clock.now()
  await ui.server.rt.store.db.insertInto('webhook_events').values({
    event_id: 'evt_vm', target: 'formant', event_type: 'call.voicemail', conversation_id: null, trace_id: null, agent_id: null, body: JSON.stringify(makeEvent({ event_id: 'evt_vm' })),
    headers: '{}', source: 'webhook', received_at: at, status: 'pending', attempts: 0, next_attempt_at: at, claimed_by: null, claimed_until: null, last_error: null, processed_at: null,
  }).execute()
  await deliver(ui.server, ui.clock, { event_id: 'evt_other', event_type: 'call.busy' })
  browser = await launchBrowser()
}, 60_000)
afterAll(async () => {
  await browser?.close()
  await ui?.close()
})

it('a submitted form keeps the type it was opened with', async () => {
  const { jar } = await login(ui.server.url)
  const context = await browser.newContext({ locale: 'en-US' })
  await context.addCookies([...jar].map(([name, value]) => ({ name, value, url: ui.server.url })))
  const page = await context.newPage()
  await page.goto(`${ui.server.url}/ui/events?type=call.voicemail`)
  expect(await page.getByLabel('Type').inputValue()).toBe('call.voicemail')
  await page.getByLabel('Status').selectOption('pending')
  await page.getByRole('button', { name: 'Filter' }).click()
  await page.waitForURL(/status=pending/)
  const url = new URL(page.url())
  expect(url.searchParams.get('type')).toBe('call.voicemail')
  expect(await page.locator('table a[href^="ui/events/"]').count()).toBe(1)
  await context.close()
})
