import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { addToDnc } from '../../src/campaigns/dnc.ts'
import { dayRange } from '../../src/reports/day-range.ts'
import { subjectFor } from '../../src/reports/format.ts'
import { insertMailLog, updateMailLog } from '../../src/reports/mail-log.ts'
import { launchBrowser } from '../helpers/browser.ts'
import { login, startUiServer, TOKEN, type UiServer } from './helpers.ts'

/**
 * axe's minor findings the page-by-page sweep (accessibility.test.ts: serious and critical only) lets through: a column
 * header with no text (the campaigns' funnel tables, the mail log's and the do-not-call list's button columns), and the
 * do-not-call list's buttons all named "Remove" — a screen reader's list of buttons could not tell which number each removes.
 */
const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8')
const DAY = '2026-03-01'
const TZ = 'Asia/Kolkata'

let ui: UiServer
let browser: Browser
let page: Page

beforeAll(async () => {
  ui = await startUiServer({ ADMIN_TOKEN: TOKEN, RECIPES_TIMEZONE: TZ })
  const rt = ui.server.rt
  const { startMs } = dayRange(DAY, TZ)
  for (let n = 0; n < 3; n++) {
    const ended = startMs + 3_600_000 + n * 60_000
    await rt.store.db.insertInto('conversations').values({
      conversation_id: `conv_${n}`, agent_id: 101 + n, contact_number: `+91987654321${n}`, status: n ? 'no_answer' : 'completed', terminal: 1, duration_seconds: 30,
      started_at: ended - 30_000, ended_at: ended, failure_reason: null, trace_id: `tr_${n}`, from_phone: null, results: null, call_parameters: '{}',
      last_event_at: ended, source: 'webhook', created_at: ended, updated_at: ended,
    }).execute()
  }
  await insertMailLog(rt, { id: 'mail_failed_1', recipients: ['ops@example.com'], subject: subjectFor(DAY, TZ) })
  await updateMailLog(rt, 'mail_failed_1', { status: 'failed', attempts: 4, error: 'ECONNREFUSED: smtp down' })
  await addToDnc(rt, '+919876543210', { reason: 'asked', source: 'dashboard' })
  await addToDnc(rt, '+919876543211', { reason: 'asked', source: 'dashboard' })
  const { jar } = await login(ui.server.url)
  browser = await launchBrowser()
  const context = await browser.newContext({ locale: 'en-US' })
  await context.addCookies([...jar].map(([name, value]) => ({ name, value, url: ui.server.url })))
  page = await context.newPage()
}, 60_000)

afterAll(async () => {
  await browser?.close()
  await ui?.close()
})

async function violations(p: Page, rules: string[]): Promise<string[]> {
  await p.evaluate(axeSource)
  return p.evaluate(async (only) => {
    const axe = (window as unknown as { axe: { run(ctx: Document, opts: object): Promise<{ violations: Array<{ id: string; nodes: Array<{ target: unknown }> }> }> } }).axe
    const r = await axe.run(document, { runOnly: { type: 'rule', values: only }, resultTypes: ['violations'] })
    return r.violations.flatMap((v) => v.nodes.map((n) => `${v.id} at ${JSON.stringify(n.target)}`))
  }, rules)
}

it('every column header has text: the funnel tables, the mail log, the do-not-call list', async () => {
  for (const path of [`/ui/campaigns?date=${DAY}`, '/ui/mail']) {
    await page.goto(`${ui.server.url}${path}`)
    expect(await page.locator('table').count(), path).toBeGreaterThanOrEqual(2)
    expect(await violations(page, ['empty-table-header']), path).toEqual([])
  }
  await page.goto(`${ui.server.url}/ui/campaigns?date=${DAY}`)
  expect(await page.getByRole('region', { name: 'Campaigns' }).getByRole('columnheader').first().textContent()).toBe('Campaign')
  expect(await page.getByRole('region', { name: 'Agents' }).getByRole('columnheader').first().textContent()).toBe('Agent')
  await page.goto(`${ui.server.url}/ui/mail`)
  expect(await page.getByRole('region', { name: 'Mail log' }).getByRole('columnheader', { name: 'Action' }).count()).toBe(1)
})

it('each Remove button on the do-not-call list is named for its number', async () => {
  await page.goto(`${ui.server.url}/ui/mail`)
  for (const phone of ['+919876543210', '+919876543211']) {
    const button = page.getByRole('button', { name: `Remove ${phone}`, exact: true })
    expect(await button.count(), phone).toBe(1)
    expect(await button.textContent()).toBe('Remove')
  }
  expect(await page.getByRole('button', { name: 'Remove', exact: true }).count()).toBe(0)
})
