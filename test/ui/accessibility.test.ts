import { randomUUID } from 'node:crypto'
import { mkdirSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { resolve } from 'node:path'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { addToDnc } from '../../src/campaigns/dnc.ts'
import { startDeliveryWorker } from '../../src/destinations/worker.ts'
import { drainDue } from '../../src/webhooks/processing.ts'
import { launchBrowser } from '../helpers/browser.ts'
import { startSink, WAIT, type Sink } from '../destinations/helpers.ts'
import { login, startUiServer, TOKEN, type UiServer } from './helpers.ts'
import { deliver, XSS } from './seed.ts'

/**
 * Every page in a real Chromium: axe-core finds no serious or critical violation, nothing is wider than
 * a 375 px phone, and a `<script>` stored in an event renders as text. The overview's screenshot for the
 * README is taken here (docs/dashboard.png).
 */
const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8')
const SCREENSHOT = resolve(import.meta.dirname, '../../docs/dashboard.png')

let ui: UiServer
let sink: Sink
let browser: Browser
let context: BrowserContext
let page: Page
let xssEvent: string
const PAGES = ['/ui', '/ui/events', '', '/ui/recipes', '/ui/calls', '/ui/campaigns', '/ui/mail', '/ui/destinations']

beforeAll(async () => {
  // A destination, so the Destinations page has its tables and the overview its Forwarding card.
  sink = await startSink()
  const crm = { name: 'crm', url: sink.url, secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', allowHttp: true }
  ui = await startUiServer({ ADMIN_TOKEN: TOKEN, ALLOW_PRIVATE_DESTINATIONS: '1', DESTINATIONS: JSON.stringify([crm]) })
  xssEvent = await deliver(ui.server, ui.clock, {
    event_id: 'evt_xss',
    call: { call_parameters: { customer_phone: '+919876543210', customer_name: XSS } },
    data: { results: { customer_name: XSS, intent: 'pay_later' } },
  })
  // A few hours of traffic, so the charts (and the README's screenshot) have a shape.
  const types = ['call.completed', 'call.no_answer', 'call.busy', 'call.completed', 'call.failed'] as const
  for (let hour = 0; hour < 10; hour++) {
    for (let i = 0; i <= (hour * 7) % 5; i++) await deliver(ui.server, ui.clock, { event_type: types[(hour + i) % types.length] })
    await ui.clock.advance(3_600_000)
  }
  PAGES[2] = `/ui/events/${xssEvent}`
  // Processed and forwarded, as a running service would have them: the README's screenshot shows a healthy service,
  // not a backlog.
  await drainDue(ui.server.rt)
  const worker = startDeliveryWorker(ui.server.rt)
  const waiting = async () => (await ui.server.rt.store.db.selectFrom('destination_deliveries').select('id').where('status', '!=', 'delivered').execute()).length
  await vi.waitFor(async () => expect(await waiting()).toBe(0), WAIT)
  await worker.stop()
  const { jar } = await login(ui.server.url)
  browser = await launchBrowser()
  context = await browser.newContext({ locale: 'en-US', viewport: { width: 375, height: 800 } })
  await context.addCookies([...jar].map(([name, value]) => ({ name, value, url: ui.server.url })))
  page = await context.newPage()
}, 60_000)

afterAll(async () => {
  await browser?.close()
  await ui?.close()
  await sink?.close()
})

async function seriousViolations(p: Page): Promise<string[]> {
  // evaluate() is not subject to the page's CSP (an injected <script> tag would be, rightly).
  await p.evaluate(axeSource)
  const result = await p.evaluate(async () => {
    const axe = (window as unknown as { axe: { run(ctx: Document, opts: object): Promise<{ violations: Array<{ id: string; impact: string | null; nodes: Array<{ target: unknown }> }> }> } }).axe
    const r = await axe.run(document, { resultTypes: ['violations'] })
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, targets: v.nodes.slice(0, 3).map((n) => JSON.stringify(n.target)) }))
  })
  return result.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id} (${v.impact}) at ${v.targets.join(', ')}`)
}

describe('every page', () => {
  for (const index of PAGES.keys()) {
    it(`page ${index}: no serious/critical axe violation; no horizontal scroll at 375 px`, async () => {
      const path = PAGES[index]!
      await page.goto(`${ui.server.url}${path}`)
      await page.waitForLoadState('load')
      expect(new URL(page.url()).pathname).toBe(path)
      expect(await seriousViolations(page), path).toEqual([])
      const widths = await page.evaluate(() => ({ scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth }))
      expect(widths.scroll, path).toBeLessThanOrEqual(widths.client)
    })
  }

  it('the login page too', async () => {
    const fresh = await browser.newPage({ locale: 'en-US', viewport: { width: 375, height: 800 } })
    await fresh.goto(`${ui.server.url}/ui/login`)
    expect(await seriousViolations(fresh)).toEqual([])
    expect(await fresh.evaluate(() => document.documentElement.scrollWidth <= document.documentElement.clientWidth)).toBe(true)
    await fresh.close()
  })
})

it('a <script> stored in an event (customer_name) renders as inert text', async () => {
  await page.goto(`${ui.server.url}/ui/events/${xssEvent}`)
  const body = await page.locator('pre').textContent()
  expect(body).toContain('<script>window.__xss = 1</script>')
  expect(await page.evaluate(() => (window as unknown as { __xss?: number }).__xss)).toBeUndefined()
  expect(await page.locator('pre script, pre img').count()).toBe(0)
})

it('saves a screenshot of the overview for the README', async () => {
  const wide = await browser.newPage({ locale: 'en-US', viewport: { width: 1100, height: 760 } })
  await wide.context().addCookies(await context.cookies())
  await wide.goto(`${ui.server.url}/ui`)
  await wide.locator('figure .uplot canvas').first().waitFor()
  mkdirSync(resolve(SCREENSHOT, '..'), { recursive: true })
  await wide.screenshot({ path: SCREENSHOT, type: 'png' })
  await wide.close()
})

it('at 1280 px the events, calls, campaigns, destinations and do-not-call tables fit without scrolling sideways: long ids shortened, errors wrap', async () => {
  // UUID conversation ids and a long error, as a real campaign has them (newest first: the top of the page).
  const failed = await deliver(ui.server, ui.clock, { call: { conversation_id: `${randomUUID()}_1` } })
  for (let i = 0; i < 3; i++) await deliver(ui.server, ui.clock, { call: { conversation_id: `${randomUUID()}_${i + 1}` } })
  const error = 'read model: upstream 503 Service Unavailable while fetching the conversation; will retry after the backoff of 30 s'
  await ui.server.rt.store.db.updateTable('webhook_events').set({ status: 'dead', last_error: error }).where('event_id', '=', failed).execute()
  const traces: string[] = []
  for (const [phone, campaign] of [['+919876543210', 'spring-leads'], ['+919876543211', undefined]] as const) {
    const placed = await fetch(`${ui.server.url}/v1/call`, {
      method: 'POST',
      headers: { authorization: 'Bearer sk_test_acme', 'content-type': 'application/json' },
      body: JSON.stringify({ agent_id: 101, parameters: [{ name: 'customer_phone', value: phone }, ...(campaign ? [{ name: 'campaign', value: campaign }] : [])] }),
    })
    expect(placed.status).toBe(200)
    traces.push(((await placed.json()) as { data: { trace_id: string } }).data.trace_id)
  }
  // The sandbox reports both calls (numbers ending 0 and 1 complete), and processing files their conversations.
  const reported = async () => (await ui.server.rt.store.db.selectFrom('conversations').select('conversation_id').where('trace_id', 'in', traces).where('status', '=', 'completed').execute()).length
  await vi.waitFor(async () => {
    await ui.clock.advance(60_000)
    await drainDue(ui.server.rt)
    expect(await reported()).toBe(2)
  }, WAIT)
  const optedOut = `${randomUUID()}_2`
  await addToDnc(ui.server.rt, '+919876543219', { reason: 'results asked not to be called', source: `conversation:${optedOut}` })
  const wide = await context.newPage()
  await wide.setViewportSize({ width: 1280, height: 800 })
  for (const path of ['/ui/events', '/ui/calls', '/ui/mail', '/ui/campaigns?date=2026-03-01', '/ui/destinations']) {
    await wide.goto(`${ui.server.url}${path}`)
    const tables = await wide.locator('.table-wrap').evaluateAll((wraps) => wraps.map((w) => ({ scroll: w.scrollWidth, client: w.clientWidth })))
    expect(tables.length, path).toBeGreaterThan(0)
    for (const t of tables) expect(t.scroll, path).toBeLessThanOrEqual(t.client)
  }
  // The campaigns' outcomes wrap (the day has calls).
  await wide.goto(`${ui.server.url}/ui/campaigns?date=2026-03-01`)
  expect(await wide.locator('td .cell-text').first().textContent()).toMatch(/completed \d+/)
  // The whole id is a hover away, and its link finds the records that share it.
  await wide.goto(`${ui.server.url}/ui/events`)
  const conversation = wide.locator('td a[title$="_3"]').first()
  const full = (await conversation.getAttribute('title'))!
  expect(await conversation.textContent()).toBe(`${full.slice(0, 4)}…${full.slice(-4)}`)
  await conversation.click()
  await expect.poll(() => new URL(wide.url()).searchParams.get('conversation_id')).toBe(full)
  expect(await wide.locator('tbody tr').count()).toBe(1)
  await wide.goto(`${ui.server.url}/ui/events`)
  expect(await wide.locator('.cell-text').first().getAttribute('title')).toBe(error)
  // An opt-out's conversation, on the do-not-call list, the same way.
  await wide.goto(`${ui.server.url}/ui/mail`)
  expect(await wide.locator(`td a[title="${optedOut}"]`).textContent()).toBe(`${optedOut.slice(0, 4)}…${optedOut.slice(-4)}`)
  // A call's campaign as the daily report counts it: its `campaign` parameter, else "(direct)".
  await wide.goto(`${ui.server.url}/ui/calls`)
  const campaignOfRow = (phone: string) => wide.locator('tbody tr', { hasText: phone }).locator('td').nth(4).textContent()
  expect(await campaignOfRow('+919876543210')).toBe('spring-leads')
  expect(await campaignOfRow('+919876543211')).toBe('(direct)')
  // What each came to, beside its status: the conversation the sandbox reported for its trace id.
  const rowOf = (phone: string) => wide.locator('tbody tr', { hasText: phone }).locator('td')
  expect([await rowOf('+919876543210').nth(5).textContent(), await rowOf('+919876543210').nth(6).textContent()]).toEqual(['initiated', 'completed'])
  // A call's number opens its follow-up chain.
  await wide.locator('td a', { hasText: '+919876543211' }).click()
  await wide.getByRole('heading', { name: 'Follow-up chain' }).waitFor()
  expect(new URL(wide.url()).searchParams.get('chain')).toBeTruthy()
  await wide.close()
})
