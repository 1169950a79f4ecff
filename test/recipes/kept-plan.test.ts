import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/config/load.ts'
import type { PlannedEffect } from '../../src/effects.ts'
import { decodePlan, encodePlan, KEPT_EFFECTS, KEPT_ROWS, MAX_PLAN_CHARS } from '../../src/recipes/kept-plan.ts'
import { createRuntime, type Runtime } from '../../src/runtime.ts'
import { createApp } from '../../src/server.ts'
import { runCli } from '../webhooks/helpers.ts'
import { tempRecipesDir } from './helpers.ts'

/**
 * A run's record keeps the start of a long plan, with the counts whole: a nightly batch over 100,000 contacts pushed
 * every row into its run's record, dry or real — an 11 MB row a night, each listing of runs parsing it (the admin API's
 * runs answered 226 MB in 3.3 s; the Recipes page took 470 ms). The run just made by the CLI still prints its plan whole.
 */
const ROWS = 20_000
const REJECTS = KEPT_ROWS + 100
const CALLS = KEPT_EFFECTS + 100
const SWEEP = `import { defineRecipe } from 'switchboard'
export default defineRecipe({
  description: 'a sweep after an outage',
  async run(ctx) {
    const rows = Array.from({ length: ${ROWS} }, (_, i) => ({ customer_phone: '+9198' + String(10000000 + i), name: 'Person <' + i + '>' }))
    const bad = Array.from({ length: ${REJECTS} }, (_, i) => ({ customer_phone: '12' + i }))
    const batch = await ctx.campaigns.launchBatch({ agentId: 101, name: 'leads', rows: [...rows, ...bad], window: false })
    await ctx.campaigns.scheduleCalls(Array.from({ length: ${CALLS} }, (_, i) => ({ agentId: 101, phone: '+9197' + String(10000000 + i) })))
    await ctx.state.set('cursor', { seen: ${ROWS} })
    return { rows: batch.rows.length, rejects: batch.rejects.length }
  },
})
`

type Batch = Extract<PlannedEffect, { kind: 'batch' }>
const batchOf = (plan: PlannedEffect[]) => plan.find((e): e is Batch => e.kind === 'batch')!

let rt: Runtime | undefined
let folder: ReturnType<typeof tempRecipesDir> | undefined
let dataDir: string | undefined
afterEach(async () => {
  await rt?.close()
  folder?.cleanup()
  if (dataDir) rmSync(dataDir, { recursive: true, force: true })
  rt = folder = dataDir = undefined
})

it('a dry run prints its plan whole; its record keeps the first rows and calls, and every reader gets the counts', async () => {
  folder = tempRecipesDir()
  folder.write('sweep', SWEEP)
  dataDir = mkdtempSync(join(tmpdir(), 'sb-kept-plan-'))
  // Not the sandbox: a batch of 20,000 rows is past the sandbox's 10,000, which a dry run refuses as the real run would.
  const env = { DATA_DIR: dataDir, RECIPES_DIR: folder.dir, RECIPES_TYPECHECK: 'false', LOG_LEVEL: 'silent', ADMIN_TOKEN: 'kept-plan-token-0123456789abcdef', VOICE_API_KEY: 'sk_test_kept_plan', WEBHOOK_SECRET: 'whsec_kept_plan' }

  const made = await runCli(['recipes', 'run', 'sweep', '--dry-run', '--json'], env)
  expect(made.code, made.err).toBe(0)
  const run = JSON.parse(made.out) as { id: string; plan: PlannedEffect[]; plan_omitted?: unknown }
  // The run just made: whole.
  expect(batchOf(run.plan).rows).toHaveLength(ROWS)
  expect(batchOf(run.plan).rejects).toHaveLength(REJECTS)
  expect(run.plan.filter((e) => e.kind === 'call')).toHaveLength(CALLS)
  expect(run.plan_omitted).toBeUndefined()

  rt = await createRuntime(loadConfig({ env }))
  const stored = await rt.store.db.selectFrom('recipe_runs').select('plan').where('id', '=', run.id).executeTakeFirstOrThrow()
  expect(stored.plan!.length).toBeLessThan(200_000)
  // Still a list of effects, as an earlier version reads it during a rolling deploy.
  expect((JSON.parse(stored.plan!) as PlannedEffect[]).every((e) => ['batch', 'call', 'state'].includes(e.kind))).toBe(true)

  const app = createApp(rt)
  const get = (path: string) => app.fetch(new Request(`http://127.0.0.1${path}`, { headers: { authorization: `Bearer ${env.ADMIN_TOKEN}` } }))
  const api = (await (await get('/admin/recipes/sweep/runs')).json()) as { data: Array<{ plan: PlannedEffect[]; plan_omitted: Record<string, number> }> }
  const [record] = api.data
  const batch = batchOf(record!.plan)
  expect(batch.rows).toHaveLength(KEPT_ROWS)
  expect(batch.rows[0]).toEqual({ customer_phone: '+919810000000', name: 'Person <0>', campaign: 'leads' })
  expect(batch).toMatchObject({ rows_omitted: ROWS - KEPT_ROWS, rejects_omitted: REJECTS - KEPT_ROWS })
  expect(batch.rejects).toHaveLength(KEPT_ROWS)
  expect(record!.plan.filter((e) => e.kind === 'call')).toHaveLength(KEPT_EFFECTS)
  expect(record!.plan_omitted).toEqual({ call: CALLS - KEPT_EFFECTS })
  expect(JSON.stringify(record)).not.toContain('omitted_after')

  const listed = await runCli(['recipes', 'runs', 'sweep', '--json'], env)
  expect(listed.code, listed.err).toBe(0)
  expect(JSON.parse(listed.out)).toEqual([expect.objectContaining({ id: run.id, planned: 1 + CALLS + 1 })])

  const text = await runCli(['recipes', 'runs', 'sweep'], env)
  expect(text.code, text.err).toBe(0)

  const page = await (await get(`/ui/recipes/sweep/runs/${run.id}`)).text()
  expect(page).toContain(`Batch “leads” for agent 101: ${ROWS} row(s), ${REJECTS} rejected`)
  expect(page).toContain(`… and ${(ROWS - KEPT_ROWS).toLocaleString('en')} more rows, not shown`)
  expect(page).toContain(`… and ${(CALLS - KEPT_EFFECTS).toLocaleString('en')} more calls, not shown`)
  expect(page.match(/<section aria-label="Call /g)).toHaveLength(KEPT_EFFECTS)
  expect(page).toContain('Person &lt;0&gt;')
  expect(page).toContain('State “cursor” set')

  // Asked for over HTTP, a run answers its plan as its record keeps it: the whole one crossed from the processing
  // thread to the receiver's, which decoded it and wrote it out again while webhooks waited.
  const posted = await app.fetch(new Request('http://127.0.0.1/admin/recipes/sweep/run?dry_run=1', { method: 'POST', headers: { authorization: `Bearer ${env.ADMIN_TOKEN}` } }))
  expect(posted.status).toBe(200)
  const answered = (await posted.json()) as { data: { dry_run: boolean; plan: PlannedEffect[]; plan_omitted: Record<string, number> } }
  expect(answered.data.dry_run).toBe(true)
  expect(batchOf(answered.data.plan)).toMatchObject({ rows_omitted: ROWS - KEPT_ROWS })
  expect(answered.data.plan_omitted).toEqual({ call: CALLS - KEPT_EFFECTS })
})

describe('the plan column', () => {
  const call = (i: number): PlannedEffect => ({ kind: 'call', request: { agent_id: 101, parameters: [{ name: 'customer_phone', value: `+9197${String(i).padStart(8, '0')}` }] } })

  it('keeps a plan within the bounds as it is', () => {
    const plan: PlannedEffect[] = [call(1), { kind: 'mail', to: ['ops@example.com'], subject: 'Daily report' }]
    expect(encodePlan(plan)).toBe(JSON.stringify(plan))
    expect(decodePlan(encodePlan(plan))).toEqual({ effects: plan, omitted: {} })
    expect(encodePlan([])).toBeNull()
    expect(decodePlan(null)).toEqual({ effects: [], omitted: {} })
  })

  it('cuts every kind of effect past its bound, each counted', () => {
    const publishes = Array.from({ length: KEPT_EFFECTS + 5 }, (_, i): PlannedEffect => ({ kind: 'publish', event_type: 'lead.scored', event_id: `evt_${i}`, destinations: ['crm'] }))
    const plan = decodePlan(encodePlan([...publishes, ...Array.from({ length: KEPT_EFFECTS + 1 }, (_, i) => call(i))]))
    expect(plan.omitted).toEqual({ publish: 5, call: 1 })
    expect(plan.effects).toHaveLength(2 * KEPT_EFFECTS)
  })

  it('stays within MAX_PLAN_CHARS whatever its effects hold: fewer rows, then long strings cut', () => {
    const wide = Array.from({ length: 5_000 }, (_, i) => ({ customer_phone: `+9198${String(i).padStart(8, '0')}`, notes: 'n'.repeat(5_000) }))
    const batch = encodePlan([{ kind: 'batch', agent_id: 101, name: 'wide', rows: wide, rejects: [] }])!
    expect(batch.length).toBeLessThanOrEqual(MAX_PLAN_CHARS)
    const kept = batchOf(decodePlan(batch).effects)
    expect(kept.rows.length + kept.rows_omitted!).toBe(5_000)
    expect(kept.rows[0]).toEqual(wide[0])

    const huge = encodePlan([{ kind: 'state', action: 'set', key: 'cursor', value: JSON.stringify('x'.repeat(3_000_000)) }])!
    expect(huge.length).toBeLessThanOrEqual(MAX_PLAN_CHARS)
    const [state] = decodePlan(huge).effects as Array<Extract<PlannedEffect, { kind: 'state' }>>
    expect(state!.value).toMatch(/^"x+… \(\d+ more characters\)$/)
  })

  // A nightly batch whose first file held one cell of a megabyte kept that batch alone: the bounds halved until the
  // plan fit, and the other batches of the run were left out ("… and 2 more batches, not shown").
  it('a string of a megabyte is cut before any effect is left out', () => {
    const batch = (name: string, notes: string): PlannedEffect => ({ kind: 'batch', agent_id: 101, name, rows: [{ customer_phone: '+447911123417', notes }], rejects: [] })
    const plan = decodePlan(encodePlan([batch('a1', 'n'.repeat(1_100_000)), batch('b1', 'short'), batch('c1', 'short')]))
    expect(plan.omitted).toEqual({})
    expect(plan.effects.map((e) => (e as Extract<PlannedEffect, { kind: 'batch' }>).name)).toEqual(['a1', 'b1', 'c1'])
    expect(batchOf(plan.effects).rows[0]!.notes).toMatch(/^n{65536}… \(1034464 more characters\)$/)
  })

  it('reads a record written whole by 0.19.0 and earlier cut, as it reads a new one', () => {
    const rows = Array.from({ length: 2_000 }, (_, i) => ({ customer_phone: `+9198${String(i).padStart(8, '0')}` }))
    const old = JSON.stringify([{ kind: 'batch', agent_id: 101, name: 'old', rows, rejects: [] }, ...Array.from({ length: KEPT_EFFECTS + 3 }, (_, i) => call(i))])
    expect(decodePlan(old)).toEqual(decodePlan(encodePlan(JSON.parse(old) as PlannedEffect[])))
    expect(decodePlan(old).omitted).toEqual({ call: 3 })
    expect(batchOf(decodePlan(old).effects).rows_omitted).toBe(2_000 - KEPT_ROWS)
  })
})
