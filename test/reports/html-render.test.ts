import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildDailyReport, renderDailyReport } from '../../src/reports/index.ts'
import { launchBrowser } from '../helpers/browser.ts'
import { createTestRuntime } from '../helpers/runtime.ts'
import { metrics, startBatchProvider } from './fake-provider.ts'
import { DAY, insertConversations, seedKnownDay, TZ } from './seed.ts'

const OUT = join(process.cwd(), 'test-output', 'reports')

/** The seeded day, plus the things that break narrow layouts: long unbroken ids, names and reasons. */
async function renderSamples(): Promise<Record<string, string>> {
  const provider = await startBatchProvider(
    [
      { batch: { id: 7, name: 'diwali-offer-north-region-wave-2-with-an-unreasonably-long-batch-name', agent_id: 101, status: 'completed', total_recipients: 500, created_at: '2026-11-20T09:00:00+05:30' }, metrics: metrics({ total_processed: 480, completed_count: 300, no_answer_count: 120, busy_count: 40, failed_count: 20, success_count: 300, success_rate: 62.5, avg_duration_seconds: 64.2 }) },
    ],
    'sk_live_report',
  )
  const rt = await createTestRuntime({ env: { VOICE_API_KEY: 'sk_live_report', VOICE_API_BASE_URL: provider.url } })
  try {
    await seedKnownDay(rt)
    await insertConversations(rt, [
      {
        conversation_id: 'conv_' + 'x'.repeat(120), agent_id: 101234567, contact_number: '+919800000077', status: 'failed', duration_seconds: 0,
        ended_at: Date.parse('2026-11-20T13:00:00Z'), trace_id: 'tr_long', failure_reason: 'SIP/2.0_503_Service_Unavailable_upstream_carrier_gateway_timeout_after_retries_exhausted',
        results: { intent: 'an_extremely_long_intent_label_without_any_spaces_that_must_wrap_somewhere' },
        call_parameters: { campaign: 'campaign-' + 'y'.repeat(90) },
      },
    ])
    const full = renderDailyReport(await buildDailyReport(rt, { date: DAY, timezone: TZ }))
    const empty = renderDailyReport(await buildDailyReport(rt, { date: '2026-11-25', timezone: TZ }))
    return { full: full.html, empty: empty.html }
  } finally {
    await rt.close()
    await provider.close()
  }
}

describe('report HTML in headless Chromium', () => {
  let browser: Browser | undefined
  let samples: Record<string, string> = {}

  beforeAll(async () => {
    browser = await launchBrowser()
    samples = await renderSamples()
    mkdirSync(OUT, { recursive: true })
    for (const [name, html] of Object.entries(samples)) writeFileSync(join(OUT, `report-${name}.html`), html)
  }, 60_000)

  afterAll(async () => {
    await browser?.close()
  })

  for (const width of [375, 600]) {
    for (const name of ['full', 'empty']) {
      it(`${name} report at ${width} px: nothing overflows horizontally, no external requests`, async () => {
        const context = await browser!.newContext({ viewport: { width, height: 800 }, deviceScaleFactor: 1, javaScriptEnabled: true })
        const requests: string[] = []
        await context.route('**/*', (route) => {
          requests.push(route.request().url())
          return route.abort()
        })
        const page = await context.newPage()
        try {
          await page.setContent(samples[name]!, { waitUntil: 'load' })
          await page.screenshot({ path: join(OUT, `report-${name}-${width}.png`), fullPage: true })
          const layout = await page.evaluate(() => {
            const vw = window.innerWidth
            const offenders: string[] = []
            for (const el of Array.from(document.body.querySelectorAll('*'))) {
              const r = el.getBoundingClientRect()
              if (r.width === 0 && r.height === 0) continue
              if (r.right > vw + 0.5 || r.left < -0.5) offenders.push(`${el.tagName.toLowerCase()} ${Math.round(r.left)}–${Math.round(r.right)}: ${(el.textContent ?? '').trim().slice(0, 40)}`)
            }
            return { vw, scrollWidth: document.documentElement.scrollWidth, offenders, text: document.body.innerText }
          })
          expect(layout.vw).toBe(width)
          expect(layout.scrollWidth).toBeLessThanOrEqual(width)
          expect(layout.offenders).toEqual([])
          expect(requests).toEqual([])
          if (name === 'full') {
            expect(layout.text).toMatch(/Success rate\s+36\.4%/i) // 8 of 22
            expect(layout.text).toContain('Webhook health')
          } else {
            expect(layout.text).toContain('a quiet day')
          }
        } finally {
          await context.close()
        }
      })
    }
  }
})
