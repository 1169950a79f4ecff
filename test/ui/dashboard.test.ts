import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { launchBrowser } from '../helpers/browser.ts'
import { insertMailLog, updateMailLog } from '../../src/reports/mail-log.ts'
import { subjectFor } from '../../src/reports/format.ts'
import { startUiServer, TOKEN, type UiServer } from './helpers.ts'
import { deliver } from './seed.ts'

/**
 * The dashboard in a real Chromium (from npm: @sparticuz/chromium) against the service on a real port:
 * one browser, one signed-in page, each flow an operator would follow.
 */
let ui: UiServer
let browser: Browser
let page: Page
let base: string
const ids: Record<string, string> = {}

beforeAll(async () => {
  ui = await startUiServer({ ADMIN_TOKEN: TOKEN })
  base = ui.server.url
  ids.completed = await deliver(ui.server, ui.clock, { event_id: 'evt_ui_completed', event_type: 'call.completed' })
  ids.noAnswer = await deliver(ui.server, ui.clock, { event_id: 'evt_ui_no_answer', event_type: 'call.no_answer', call: { to_phone: '+919876543215' } })
  ids.busy = await deliver(ui.server, ui.clock, { event_id: 'evt_ui_busy', event_type: 'call.busy' })
  browser = await launchBrowser()
  // An explicit locale, as a user's browser has (the machine's POSIX locale gives "en-US@posix": a test of its own).
  page = await browser.newPage({ locale: 'en-US' })
}, 60_000)

afterAll(async () => {
  await browser?.close()
  await ui?.close()
})

it('logs in with the admin token', async () => {
  await page.goto(`${base}/ui/events`)
  expect(new URL(page.url()).pathname).toBe('/ui/login')
  await page.getByLabel('Admin token').fill('wrong-token-wrong-token')
  await page.getByRole('button', { name: 'Log in' }).click()
  await expect.poll(() => page.getByRole('alert').textContent()).toContain('not right')
  await page.getByLabel('Admin token').fill(TOKEN)
  await page.getByRole('button', { name: 'Log in' }).click()
  await page.waitForURL(`${base}/ui/events`)
  expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Events')
})

it('filters events, opens one, replays it and sees its status change', async () => {
  await page.goto(`${base}/ui/events`)
  await page.getByLabel('Type').selectOption('call.no_answer')
  await page.getByRole('button', { name: 'Filter' }).click()
  await page.waitForURL(/type=call.no_answer/)
  const links = page.locator('table a[href^="ui/events/"]')
  // The id shortened to its two ends when long, whole in the tooltip.
  expect(await links.evaluateAll((as) => as.map((a) => a.getAttribute('title') ?? a.textContent))).toEqual([ids.noAnswer])

  await links.first().click()
  await page.waitForURL(`${base}/ui/events/${ids.noAnswer}`)
  expect(await page.locator('#event-status').textContent()).toBe('pending')
  // The number called, linked to every event of that number.
  const phone = page.getByRole('row', { name: /^Phone/ }).getByRole('link')
  expect(await phone.textContent()).toBe('+919876543215')
  expect(new URL((await phone.getAttribute('href'))!, base).searchParams.get('phone')).toBe('+919876543215')
  expect(await page.locator('pre').textContent()).toContain('"event_type": "call.no_answer"')
  page.once('dialog', (d) => void d.accept())
  await page.getByRole('button', { name: 'Replay', exact: true }).click()
  await page.waitForURL(/done=replayed-one/)
  expect(await page.locator('#event-status').textContent()).toBe('processed')
  expect(await page.getByRole('status').textContent()).toContain('now processed')
})

it('dry-runs a recipe and shows its plan: batch rows and rejected rows with reasons', async () => {
  const inbox = join(ui.dataDir, 'inbox')
  mkdirSync(inbox, { recursive: true })
  writeFileSync(join(inbox, 'leads.csv'), 'name,phone\nAsha,9876543210\nRavi,98765 43211\nBad,555\n')
  await page.goto(`${base}/ui/recipes`)
  const recipe = page.getByRole('article', { name: 'Recipe nightly-batch' })
  await recipe.getByRole('button', { name: 'Dry run' }).click()
  // The POST answers 303 to the run's own page: reloading it shows the run, never runs it again.
  await page.waitForURL(new RegExp(`^${base}/ui/recipes/nightly-batch/runs/[^/?#]+$`))
  expect(await page.locator('#run-status').textContent()).toBe('succeeded')
  const plan = page.locator('#plan')
  expect(await plan.getByRole('heading', { level: 3 }).first().textContent()).toMatch(/Batch “leads.*” for agent 101: 2 row\(s\), 1 rejected/)
  const rejects = plan.getByRole('region', { name: /rejected rows/ })
  expect(await rejects.locator('tbody tr').allInnerTexts()).toEqual([expect.stringMatching(/^4\s+555\s+\S/)])
  expect(await plan.textContent()).toContain('+919876543210')
  // The summary the recipe returned: its figures in a line, the whole value below it.
  expect(await page.getByRole('row', { name: /^Summary/ }).locator('p').textContent()).toBe('files 1 · batches 1')
  expect(await page.getByRole('row', { name: /^Summary/ }).locator('pre').textContent()).toContain('"batches": [')
  // And in the recipe's last runs, as a line rather than JSON.
  await page.goto(`${base}/ui/recipes`)
  const runs = page.getByRole('region', { name: 'Runs of nightly-batch' })
  expect(await runs.locator('tbody tr').first().innerText()).toMatch(/\(dry run\)\s+succeeded\s+\d+ ms\s+files 1 · batches 1/)
})

it('draws the overview charts (a canvas with the data)', async () => {
  await page.goto(`${base}/ui`)
  const canvas = page.locator('figure .uplot canvas').first()
  await canvas.waitFor()
  const painted = await canvas.evaluate((el) => {
    const c = el as HTMLCanvasElement
    const data = c.getContext('2d')!.getImageData(0, 0, c.width, c.height).data
    let n = 0
    for (let i = 3; i < data.length; i += 4) if (data[i]! > 0) n++
    return { width: c.width, height: c.height, painted: n }
  })
  expect(painted.width).toBeGreaterThan(100)
  expect(painted.painted).toBeGreaterThan(50)
  // The legend names the series drawn: the types and statuses of the stored events.
  const legend = await page.locator('figure').first().locator('.u-legend').innerText()
  expect(legend).toContain('call.completed')
  expect(legend).toContain('call.no_answer')
})

it('lets go of the charts the overview\'s refresh swaps out: one resize listener, however long the tab stays open', async () => {
  await page.goto(`${base}/ui`)
  await page.locator('figure .uplot canvas').first().waitFor()
  const cdp = await page.context().newCDPSession(page)
  const listeners = async () => {
    const { result } = await cdp.send('Runtime.evaluate', { expression: 'getEventListeners(window).resize?.length ?? 0', includeCommandLineAPI: true, returnByValue: true })
    return result.value as number
  }
  const before = await listeners()
  // The swap the 15 s poll does, ten times over.
  for (let i = 0; i < 10; i++) {
    await page.evaluate(() => (window as unknown as { htmx: { ajax(verb: string, path: string, context: object): Promise<void> } }).htmx.ajax('GET', 'ui/overview/live', { target: '#overview-live', swap: 'outerHTML' }))
    await expect.poll(() => page.locator('[data-chart]').evaluateAll((els) => els.every((el) => el.getAttribute('data-drawn') === '1'))).toBe(true)
  }
  // Each refresh added a listener per chart, each holding its old plot.
  expect(await listeners()).toBe(before)
  expect(await page.locator('.uplot').count()).toBe(2)
  await cdp.detach()
})

it('draws the overview charts in UTC, as every time on the dashboard is, in a browser in another zone', async () => {
  const context = await browser.newContext({ locale: 'en-US', timezoneId: 'Asia/Kolkata', storageState: await page.context().storageState() })
  try {
    const india = await context.newPage()
    await india.goto(`${base}/ui`)
    const over = india.locator('figure .uplot .u-over').first()
    await over.waitFor()
    const box = (await over.boundingBox())!
    // The last point is the current hour: 06:00 UTC on the test's clock (11:30 in Kolkata).
    await over.hover({ position: { x: box.width - 1, y: box.height / 2 } })
    await expect.poll(() => india.locator('figure .u-legend').first().innerText()).toMatch(/Time \(UTC\):?\s*Mar 2 06:00(?!\d)/)
    // The axis: UTC hours on the 24-hour clock, midnight by its date (the last 24 hours end at 06:00 on March 2).
    const labels = (await india.locator('figure .chart').first().getAttribute('data-x-labels'))!.split(', ')
    expect(labels).toContain('Mar 2')
    for (const label of labels) expect(label).toMatch(/^(\d{2}:00|[A-Z][a-z]{2} \d{1,2})$/)
  } finally {
    await context.close()
  }
})

it('labels the campaign trends by date — a tick a day, read in UTC even in a browser at UTC+14', async () => {
  const context = await browser.newContext({ locale: 'en-US', timezoneId: 'Pacific/Kiritimati', storageState: await page.context().storageState() })
  try {
    const east = await context.newPage()
    await east.goto(`${base}/ui/campaigns?date=2026-03-02`)
    const charts = east.locator('figure .chart')
    await expect.poll(() => charts.first().getAttribute('data-x-labels')).toBeTruthy()
    expect(await charts.first().getAttribute('data-x-labels')).toBe('Feb 24, Feb 25, Feb 26, Feb 27, Feb 28, Mar 1, Mar 2')
    // 30 days: every fourth, ending on the day shown.
    const month = (await charts.nth(1).getAttribute('data-x-labels'))!.split(', ')
    expect(month.at(-1)).toBe('Mar 2')
    expect(month.length).toBeLessThanOrEqual(8)
    // Under the cursor the legend names the day too, not a time of day.
    const over = east.locator('figure .uplot .u-over').first()
    const box = (await over.boundingBox())!
    await over.hover({ position: { x: box.width - 2, y: box.height / 2 } })
    await expect.poll(() => east.locator('figure .u-legend').first().innerText()).toMatch(/Day:?\s*Mar 2(?!\d)/)
  } finally {
    await context.close()
  }
})

it('draws the charts in a browser whose language Intl refuses (a POSIX locale: "en-US@posix")', async () => {
  // ICU takes "en-US@posix", Intl (which uPlot formats with as it loads) does not: without locale-guard.js uPlot failed
  // to load there and no chart was drawn.
  const context = await browser.newContext({ locale: 'en-US@posix', storageState: await page.context().storageState() })
  try {
    const posix = await context.newPage()
    const errors: string[] = []
    posix.on('pageerror', (error) => errors.push(error.message))
    await posix.goto(`${base}/ui`)
    expect(await posix.evaluate(() => navigator.languages[0])).toBe('en-US@posix')
    const charts = posix.locator('[data-chart]')
    await expect.poll(() => charts.evaluateAll((els) => els.map((el) => el.getAttribute('data-drawn')))).toEqual(['1', '1'])
    expect(await posix.locator('figure .uplot').count()).toBe(2)
    expect(errors).toEqual([])
  } finally {
    await context.close()
  }
})

it('says so where a chart cannot be drawn, the figures still in their tables (uPlot did not load)', async () => {
  const context = await browser.newContext({ locale: 'en-US', storageState: await page.context().storageState() })
  try {
    const blocked = await context.newPage()
    await blocked.route(/uPlot\.iife\.min\.js/, (route) => route.abort())
    const errors: string[] = []
    blocked.on('pageerror', (error) => errors.push(error.message))
    await blocked.goto(`${base}/ui`)
    const charts = blocked.locator('[data-chart]')
    await expect.poll(() => charts.evaluateAll((els) => els.map((el) => el.getAttribute('data-drawn')))).toEqual(['failed', 'failed'])
    expect(await charts.first().textContent()).toContain('could not be drawn in this browser; its figures are in the table below')
    // Nothing of switchboard's own page script failed.
    expect(errors).toEqual([])
    // The figures are still there, in the table under each chart.
    expect(await blocked.locator('figure details table').first().textContent()).toContain('call.completed')
  } finally {
    await context.close()
  }
})

it('resends a failed report mail', async () => {
  const rt = ui.server.rt
  await insertMailLog(rt, { id: 'mail_failed_1', recipients: ['ops@example.com'], subject: subjectFor('2026-03-01', 'Asia/Kolkata') })
  await updateMailLog(rt, 'mail_failed_1', { status: 'failed', attempts: 4, error: 'ECONNREFUSED: smtp down' })
  await page.goto(`${base}/ui/mail`)
  const row = page.locator('tr', { hasText: 'ECONNREFUSED' })
  expect(await row.locator('td').nth(3).textContent()).toBe('failed')
  page.once('dialog', (d) => void d.accept())
  await row.getByRole('button', { name: 'Resend' }).click()
  await page.waitForURL(/done=resent/)
  expect(await page.getByRole('status').first().textContent()).toContain('Report sent again: written')
  // A new send, written to the outbox (no SMTP_URL here), for the same people.
  const sends = await rt.store.db.selectFrom('mail_log').selectAll().orderBy('created_at').execute()
  expect(sends.map((m) => [m.status, m.recipients])).toEqual([['failed', 'ops@example.com'], ['written', 'ops@example.com']])
  // The preview frame shows the report of a day.
  const frame = page.frameLocator('iframe.preview')
  await expect.poll(() => frame.locator('body').textContent(), { timeout: 10_000 }).toMatch(/report|calls/i)
})

it('imports a DNC CSV and reports its one bad row', async () => {
  await page.goto(`${base}/ui/mail`)
  await page.getByLabel('CSV (number, reason)').setInputFiles({
    name: 'dnc.csv',
    mimeType: 'text/csv',
    buffer: Buffer.from('phone,reason\n+919876543210,asked\n98765 43219,complaint\nnot-a-number,oops\n'),
  })
  await page.getByRole('button', { name: 'Import' }).click()
  // Answered 303, as every form: the page is a GET, so reloading it imports nothing again.
  await page.waitForURL(/done=dnc-imported/)
  for (let view = 0; view < 2; view++) {
    expect(await page.locator('p.flash[role="status"]').textContent()).toBe('Imported: 2 added, 0 already listed, 1 row(s) with errors.')
    const result = page.locator('#dnc-import-result')
    expect(await result.locator('tbody tr').allInnerTexts()).toEqual([expect.stringMatching(/^4\s+not-a-number\s+not a phone number/)])
    const listed = await page.getByRole('region', { name: 'Do-not-call numbers' }).locator('tbody tr td:first-child').allTextContents()
    expect(listed.sort()).toEqual(['+919876543210', '+919876543219'])
    if (view === 0) await page.reload()
  }
})
