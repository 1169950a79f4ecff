import { expect, it } from 'vitest'
import type { PlannedEffect } from '../../src/effects.ts'
import { renderPlan } from '../../src/recipes/present.ts'
import { KEPT_EFFECTS as SHOWN_CALLS, KEPT_ROWS as SHOWN_ROWS } from '../../src/recipes/kept-plan.ts'

/**
 * The CLI's text plan (`recipes run --dry-run`, `recipes test`) shows the start of a long plan: a dry run of a nightly
 * batch over 100,000 contacts printed 100,000 lines. The counts stay whole; --json prints every row.
 */
const rows = (n: number) => Array.from({ length: n }, (_, i) => ({ customer_phone: `+9198${String(i).padStart(8, '0')}` }))
const call = (i: number): PlannedEffect => ({ kind: 'call', request: { agent_id: 101, parameters: [{ name: 'customer_phone', value: `+9197${String(i).padStart(8, '0')}` }] } })

it('prints the first rows of a large batch and the first calls, then how many more', () => {
  const rejects = Array.from({ length: SHOWN_ROWS + 3 }, (_, i) => ({ row: i + 2, raw: 'x', reason: 'not a phone number' }))
  const text = renderPlan([{ kind: 'batch', agent_id: 101, name: 'leads', rows: rows(100_000), rejects }, ...Array.from({ length: SHOWN_CALLS + 9 }, (_, i) => call(i))])
  const lines = text.trimEnd().split('\n')
  expect(lines[0]).toBe(`plan: ${1 + SHOWN_CALLS + 9} side effects`)
  expect(lines[1]).toBe(`  batch "leads" for agent 101: 100000 rows, ${SHOWN_ROWS + 3} rejected`)
  expect(lines).toContain(`    … and ${100_000 - SHOWN_ROWS} more rows, not shown (--json prints them all)`)
  expect(lines).toContain('    … and 3 more rejected rows, not shown (--json prints them all)')
  expect(lines.filter((l) => l.startsWith('  call ')).length).toBe(SHOWN_CALLS)
  expect(lines.at(-1)).toBe('  … and 9 more calls, not shown (--json prints them all)')
  expect(lines.length).toBeLessThan(2 * SHOWN_ROWS + 2 * SHOWN_CALLS + 10)
})

it('prints a plan within the bounds whole', () => {
  const text = renderPlan([{ kind: 'batch', agent_id: 101, name: 'small', rows: rows(2), rejects: [] }, call(1)])
  expect(text).not.toContain('more')
  expect(text).toContain('+919800000001')
})

it('says each change to the do-not-call table, as text and on the dashboard (the reason escaped)', async () => {
  const { renderPlanHtml } = await import('../../src/ui/plan.ts')
  const plan: PlannedEffect[] = [{ kind: 'dnc', action: 'add', phone: '+919876543221', reason: 'said <stop>' }, { kind: 'dnc', action: 'remove', phone: '+919876543222' }]
  expect(renderPlan(plan)).toBe('plan: 2 side effects\n  do-not-call: add +919876543221 (said <stop>)\n  do-not-call: remove +919876543222\n')
  const page = String(renderPlanHtml(plan))
  expect(page).toContain('<h3>Do-not-call: add +919876543221</h3>')
  expect(page).toContain('said &lt;stop&gt;')
  expect(page).toContain('<h3>Do-not-call: remove +919876543222</h3>')
})
