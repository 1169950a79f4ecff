import type { Browser, BrowserContext } from 'playwright-core'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { disableDestination } from '../../src/destinations/state.ts'
import { shownUrl } from '../../src/utils/shown-url.ts'
import { launchBrowser } from '../helpers/browser.ts'
import { login, startUiServer, TOKEN, type UiServer } from '../ui/helpers.ts'
import { deliver } from '../ui/seed.ts'
import { destination } from './helpers.ts'

/**
 * A disabled destination's State cell holds its reason (`410 Gone from <url>`): in a real Chromium, at a desktop, a
 * small laptop and a phone width, that text stays inside its cell instead of running over the Pending count beside it.
 */
const URL_410 = 'http://127.0.0.1:56869/gone?key=abcdef0123456789'
let ui: UiServer
let browser: Browser
let context: BrowserContext

beforeAll(async () => {
  ui = await startUiServer({ ADMIN_TOKEN: TOKEN, ALLOW_PRIVATE_DESTINATIONS: '1', DESTINATIONS: JSON.stringify([destination(URL_410, { name: 'gone' })]) })
  const eventId = await deliver(ui.server, ui.clock)
  const now = ui.clock.now()
  for (let i = 0; i < 5; i++) {
    await ui.server.rt.store.db.insertInto('destination_deliveries').values({
      id: `msg_gone_${i}`, destination: 'gone', event_id: eventId, event_type: 'call.completed', conversation_id: null, payload: '',
      order_at: now * 1000 + i, ordered: 0, status: 'pending', attempts: 1, round_attempts: 1, next_attempt_at: now, claimed_by: null, claimed_until: null,
      last_status: 410, last_error: 'destination answered 410 Gone; disabled', created_at: now, delivered_at: null,
    }).execute()
  }
  await disableDestination(ui.server.rt, 'gone', `410 Gone from ${shownUrl(URL_410)}`)
  const { jar } = await login(ui.server.url)
  browser = await launchBrowser()
  context = await browser.newContext({ locale: 'en-US' })
  await context.addCookies([...jar].map(([name, value]) => ({ name, value, url: ui.server.url })))
}, 60_000)

afterAll(async () => {
  await browser?.close()
  await ui?.close()
})

it.each([1280, 1024, 375])('keeps a disabled destination\'s state text inside its cell at %i px', async (width) => {
  const page = await context.newPage()
  try {
    await page.setViewportSize({ width, height: 800 })
    await page.goto(`${ui.server.url}/ui/destinations`)
    const row = page.getByRole('region', { name: 'Destinations' }).locator('tbody tr').first()
    const state = row.locator('td').nth(3)
    expect(await state.textContent()).toContain('410 Gone from http://127.0.0.1:56869/gone?key=…')
    // Every piece of the cell's text ends before the cell does, and the next cell's count starts after it.
    const overflow = await state.evaluate((td) => {
      const range = document.createRange()
      range.selectNodeContents(td)
      const right = Math.max(...[...range.getClientRects()].map((r) => r.right))
      return right - td.getBoundingClientRect().right
    })
    expect(overflow).toBeLessThanOrEqual(0)
    const stateText = await state.evaluate((td) => {
      const range = document.createRange()
      range.selectNodeContents(td)
      return Math.max(...[...range.getClientRects()].map((r) => r.right))
    })
    const pending = row.locator('td').nth(4)
    expect(await pending.textContent()).toBe('5')
    const pendingLeft = await pending.evaluate((td) => {
      const range = document.createRange()
      range.selectNodeContents(td)
      return Math.min(...[...range.getClientRects()].map((r) => r.left))
    })
    expect(stateText).toBeLessThan(pendingLeft)
  } finally {
    await page.close()
  }
})
