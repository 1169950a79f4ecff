import { expect, it } from 'vitest'
import type { PlannedEffect } from '../../src/effects.ts'
import { KEPT_EFFECTS as SHOWN_CALLS, KEPT_ROWS as SHOWN_ROWS } from '../../src/recipes/kept-plan.ts'
import { renderPlanHtml } from '../../src/ui/plan.ts'

/**
 * A plan's page (a dry run from the dashboard) shows the start of a long plan: a nightly batch over 100,000 contacts
 * made a page of 6.6 MB, one table row a contact. The headings keep the counts; the rest is said, with how to get it.
 */
const rowsOf = (n: number) => Array.from({ length: n }, (_, i) => ({ customer_phone: `+9198${String(i).padStart(8, '0')}`, name: `Person <${i}>` }))
const call = (i: number): PlannedEffect => ({
  kind: 'call',
  request: { agent_id: 101, parameters: [{ name: 'customer_phone', value: `+9197${String(i).padStart(8, '0')}` }], idempotency_key: `key-${i}` },
  campaign: 'leads',
})

it('shows the first rows of a large batch and of its rejected rows, the counts in full', () => {
  const rejects = Array.from({ length: SHOWN_ROWS + 7 }, (_, i) => ({ row: i + 2, raw: `12${i}`, reason: 'not a phone number' }))
  const page = String(renderPlanHtml([{ kind: 'batch', agent_id: 101, name: 'leads-2026-01-15', rows: rowsOf(100_000), rejects }], 'nightly-batch'))
  expect(page).toContain(`Batch “leads-2026-01-15” for agent 101: 100000 row(s), ${SHOWN_ROWS + 7} rejected`)
  expect(page.match(/<tr>/g)!.length).toBe(2 + SHOWN_ROWS * 2)
  expect(page).toContain('+919800000000')
  expect(page).toContain(`+9198${String(SHOWN_ROWS - 1).padStart(8, '0')}`)
  expect(page).not.toContain(`+9198${String(SHOWN_ROWS).padStart(8, '0')}`)
  expect(page).toContain(`… and ${(100_000 - SHOWN_ROWS).toLocaleString('en')} more rows, not shown (a dry run from the command line prints them all: <code>npm run -s cli -- recipes run nightly-batch --dry-run --json</code>).`)
  expect(page).toContain('… and 7 more rejected rows, not shown')
  // What came from the CSV is escaped, as everywhere.
  expect(page).toContain('Person &lt;0&gt;')
  expect(page.length).toBeLessThan(200_000)
})

it('shows the first calls of a plan with many, then how many more', () => {
  const plan = [...Array.from({ length: SHOWN_CALLS + 50 }, (_, i) => call(i)), { kind: 'mail', to: ['ops@example.com'], subject: 'Daily report' } as PlannedEffect]
  const page = String(renderPlanHtml(plan, 'sweep'))
  expect(page.match(/<section aria-label="Call /g)!.length).toBe(SHOWN_CALLS)
  expect(page.match(/… and 50 more calls, not shown/g)!.length).toBe(1)
  // Effects after the calls are still shown.
  expect(page).toContain('Mail “Daily report”')
})

it('a plan within the bounds is shown whole, with no note', () => {
  const page = String(renderPlanHtml([{ kind: 'batch', agent_id: 101, name: 'small', rows: rowsOf(3), rejects: [] }, call(1)], 'small'))
  expect(page).not.toContain('more')
  expect(page).toContain('+919800000002')
  expect(page).toContain('Call +919700000001')
})
