import { afterEach, beforeEach, expect, it, vi } from 'vitest'
import { loadConfig } from '../../src/config/load.ts'
import { openStore } from '../../src/db/connect.ts'
import { startRecipes } from '../../src/recipes/background.ts'
import { createRecipeEngine, recipeEngineFor, type RecipeEngine } from '../../src/recipes/engine.ts'
import { listRuns } from '../../src/recipes/runner.ts'
import { createRuntime, type Runtime } from '../../src/runtime.ts'
import { createManualClock, type ManualClock } from '../../src/utils/clock.ts'
import { createSilentLogger } from '../../src/utils/logger.ts'
import { createSeededRandom } from '../../src/utils/random.ts'
import type { WebhookEvent } from '../../src/upstream/schemas.ts'
import type { ProcessedEvent } from '../../src/webhooks/hooks.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { tempRecipesDir, tickRecipe } from './helpers.ts'

function processed(eventId: string, type: WebhookEvent['event_type'], conversationId = 'conv_1'): ProcessedEvent {
  const event: WebhookEvent = {
    event_id: eventId,
    event_type: type,
    timestamp: '2026-01-01T10:00:00Z',
    data: {
      call: {
        agent_id: 101, call_parameters: { customer_phone: '+919876543215' }, conversation_id: conversationId, duration_seconds: 0,
        started_at: null, ended_at: '2026-01-01T10:00:00Z', failure_reason: null, from_phone: '+918035550101',
        to_phone: '+919876543215', recording_url: null, status: type.slice(5), trace_id: 'tr_1',
      },
      results: {},
    },
  }
  return { eventId, eventType: type, target: 'formant', source: 'webhook', receivedAt: Date.parse('2026-01-01T10:00:01Z'), event }
}

/** What the receiver does after applying a stored event: call every registered hook with it. */
async function deliver(rt: Runtime, event: ProcessedEvent): Promise<void> {
  for (const { hook } of rt.hooks.list()) await hook(event)
}

describeEachDialect('recipe engine', (dialect) => {
  let folder: ReturnType<typeof tempRecipesDir>
  let clock: ManualClock
  let rt: TestRuntime
  const cleanups: Array<() => Promise<void> | void> = []

  /** A second replica: its own runtime and connection, the same database and clock. */
  const replica = async (): Promise<Runtime> => {
    const store = await openStore(rt.store.url, { schema: rt.store.schema })
    const other = await createRuntime(loadConfig({ env: { DATA_DIR: rt.dataDir, RECIPES_DIR: folder.dir, LOG_LEVEL: 'silent' } }), {
      store, skipMigrate: true, clock, random: createSeededRandom(7), log: createSilentLogger(),
    })
    cleanups.push(async () => {
      await other.close()
      await store.close()
    })
    return other
  }

  beforeEach(async () => {
    folder = tempRecipesDir()
    clock = createManualClock('2026-01-01T00:00:00Z')
    rt = await createTestRuntime({ dialect, clock, env: { RECIPES_DIR: folder.dir, RECIPES_TIMEZONE: 'UTC' } })
  })
  afterEach(async () => {
    for (const fn of cleanups.reverse()) await fn()
    cleanups.length = 0
    await rt.close()
    folder.cleanup()
  })

  it('of two schedulers sharing a database, only one runs each tick', async () => {
    folder.write('sweep', tickRecipe({ schedule: '*/30 * * * *' }))
    const other = await replica()
    expect(other.instanceId).not.toBe(rt.instanceId)
    const a = createRecipeEngine(rt)
    const b = createRecipeEngine(other)
    cleanups.push(() => a.stop(), () => b.stop())
    await Promise.all([a.start(), b.start()])
    for (let i = 0; i < 8; i++) {
      await clock.advance(30 * 60_000)
      await Promise.all([a.idle(), b.idle()])
    }
    const runs = (await listRuns(rt, { recipe: 'sweep', limit: 100 })).reverse()
    expect(runs.map((r) => JSON.parse(r.summary!).at)).toEqual(
      Array.from({ length: 8 }, (_, i) => new Date(Date.parse('2026-01-01T00:30:00Z') + i * 30 * 60_000).toISOString()),
    )
    expect(runs.every((r) => r.status === 'succeeded' && r.trigger === 'cron')).toBe(true)
    const owners = await rt.store.db.selectFrom('recipe_ticks').select(['tick_at', 'owner']).where('recipe', '=', 'sweep').execute()
    expect(owners).toHaveLength(8)
    expect(new Set(owners.map((o) => o.owner)).size).toBeGreaterThanOrEqual(1)
    expect(owners.every((o) => o.owner === rt.instanceId || o.owner === other.instanceId)).toBe(true)
  })

  it('fires an event trigger once per event, also when delivered twice, replayed, or seen by two replicas', async () => {
    folder.write('followup', `import { defineRecipe } from 'switchboard'
export default defineRecipe({
  description: 'reacts to unanswered calls',
  on: ['call.no_answer', 'call.busy'],
  run(ctx) { return ctx.trigger.type + ':' + ctx.trigger.event?.eventId + ':' + ctx.trigger.event?.event.data.call.to_phone },
})
`)
    folder.write('completed', `import { defineRecipe } from 'switchboard'
export default defineRecipe({ description: 'completed only', on: ['call.completed'], run: () => 'done' })
`)
    const other = await replica()
    cleanups.push(await startRecipes(rt, { watch: false }), await startRecipes(other, { watch: false }))
    expect(rt.hooks.list().map((h) => h.name)).toContain('recipes')
    const first = processed('evt_a', 'call.no_answer')
    await deliver(rt, first)
    await deliver(rt, first) // a duplicate delivery
    await deliver(other, first) // the same event processed on another replica (or replayed)
    await Promise.all([deliver(rt, processed('evt_b', 'call.busy')), deliver(other, processed('evt_b', 'call.busy'))])
    await deliver(rt, processed('evt_c', 'call.completed'))
    const runs = (await listRuns(rt, { recipe: 'followup' })).reverse()
    expect(runs.map((r) => [r.trigger, r.eventId, r.status, r.summary])).toEqual([
      ['event', 'evt_a', 'succeeded', 'event:evt_a:+919876543215'],
      ['event', 'evt_b', 'succeeded', 'event:evt_b:+919876543215'],
    ])
    expect((await listRuns(rt, { recipe: 'completed' })).map((r) => r.eventId)).toEqual(['evt_c'])
  })

  it('reports a broken recipe by name, with the reason, and loads the others', async () => {
    folder.write('good', `import { defineRecipe } from 'switchboard'
export default defineRecipe({ description: 'fine', schedule: '0 8 * * *', run: () => 'ok' })
`)
    folder.write('syntax', `import { defineRecipe } from 'switchboard'
export default defineRecipe({ description: 'oops', run() { return ( } })
`)
    folder.write('throws', `throw new Error('missing API token for the CRM')
`)
    folder.write('badcron', `import { defineRecipe } from 'switchboard'
export default defineRecipe({ description: 'x', schedule: '61 * * * *', run: () => 1 })
`)
    folder.write('badevent', `import { defineRecipe } from 'switchboard'
export default defineRecipe({ description: 'x', on: ['call.no_anwser' as never], run: () => 1 })
`)
    folder.write('badtz', `import { defineRecipe } from 'switchboard'
export default defineRecipe({ description: 'x', schedule: '0 8 * * *', timezone: 'Mars/Olympus', run: () => 1 })
`)
    folder.write('noexport', `export const nothing = 1
`)
    folder.write('_helper', `throw new Error('helpers starting with _ are not recipes')
`)
    const engine = createRecipeEngine(rt)
    cleanups.push(() => engine.stop())
    await engine.start()
    const list = await engine.list()
    const broken = Object.fromEntries(list.map((r) => [r.name, r.broken]))
    expect(Object.keys(broken).sort()).toEqual(['badcron', 'badevent', 'badtz', 'good', 'noexport', 'syntax', 'throws'])
    expect(broken.good).toBeNull()
    expect(broken.syntax).toMatch(/^failed to load: .*syntax\.ts:2:/)
    expect(broken.throws).toBe('failed to load: missing API token for the CRM')
    expect(broken.badcron).toMatch(/`schedule` "61 \* \* \* \*" is not a valid cron pattern/)
    expect(broken.badevent).toMatch(/unknown event type "call\.no_anwser"/)
    expect(broken.badtz).toMatch(/`timezone` must be an IANA time zone/)
    expect(broken.noexport).toMatch(/export default defineRecipe/)
    expect(list.find((r) => r.name === 'good')?.nextRun).toBe(Date.parse('2026-01-01T08:00:00Z'))
    expect((await engine.run('good')).summary).toBe('ok')
    await expect(engine.run('syntax')).rejects.toThrow(/recipe "syntax" is broken: failed to load/)
    await expect(engine.run('nope')).rejects.toThrow(/no recipe named "nope"/)
    await clock.advanceTo(Date.parse('2026-01-01T08:00:00Z'))
    await engine.idle()
    expect((await listRuns(rt, { recipe: 'good' })).map((r) => r.trigger)).toEqual(['cron', 'manual'])
  })

  it('picks up an edited, added or broken-then-fixed recipe without a restart', async () => {
    const source = (version: string, schedule: string) => `import { defineRecipe } from 'switchboard'
export default defineRecipe({ description: '${version}', schedule: '${schedule}', run: () => '${version}' })
`
    folder.write('edited', source('v1', '0 * * * *'))
    const engine = recipeEngineFor(rt)
    cleanups.push(() => engine.stop())
    await engine.start({ watch: true })
    expect((await engine.run('edited')).summary).toBe('v1')
    expect((await engine.list())[0]!.nextRun).toBe(Date.parse('2026-01-01T01:00:00Z'))

    folder.write('edited', source('v2', '*/5 * * * *'))
    await vi.waitFor(() => expect(engine.recipes().find((r) => r.name === 'edited')?.definition?.description).toBe('v2'), { timeout: 5000 })
    expect((await engine.run('edited')).summary).toBe('v2')
    expect((await engine.list())[0]!.nextRun).toBe(Date.parse('2026-01-01T00:05:00Z'))
    await clock.advanceTo(Date.parse('2026-01-01T00:05:00Z'))
    await engine.idle()
    expect((await listRuns(rt, { recipe: 'edited' }))[0]).toMatchObject({ trigger: 'cron', summary: 'v2' })

    folder.write('edited', 'export default {{')
    await vi.waitFor(() => expect(engine.recipes().find((r) => r.name === 'edited')?.error).toMatch(/failed to load/), { timeout: 5000 })
    folder.write('edited', source('v3', '*/5 * * * *'))
    folder.write('added', source('new', '0 0 * * *'))
    await vi.waitFor(() => expect(engine.recipes().map((r) => `${r.name}:${r.definition?.description}`)).toEqual(['added:new', 'edited:v3']), { timeout: 5000 })
    expect((await engine.run('edited')).summary).toBe('v3')
    expect((await engine.run('added')).summary).toBe('new')
  })

  it('gives run(ctx) typed read access to stored conversations, events and calls, and persisted state', async () => {
    const t = Date.parse('2026-01-01T00:00:00Z')
    const db = rt.store.db
    for (const [id, status, ended] of [['c1', 'no_answer', t - 3_600_000], ['c2', 'completed', t - 60_000], ['c3', 'busy', t - 86_400_000 * 3]] as const) {
      await db.insertInto('conversations').values({
        conversation_id: id, agent_id: 101, contact_number: '+919876543215', status, terminal: 1, duration_seconds: 0,
        started_at: ended - 1000, ended_at: ended, failure_reason: null, trace_id: `tr_${id}`, from_phone: null, recording_url: null,
        transcript: JSON.stringify([{ role: 'agent', message: 'hello' }]), results: JSON.stringify({ intent: 'later' }),
        call_parameters: JSON.stringify({ customer_phone: '+919876543215' }),
        retry: JSON.stringify({ attempt_number: 1, is_final_attempt: true, max_attempts: 1, next_retry_at: null }), retry_context: null,
        last_event_at: ended, last_event_id: null, source: 'webhook', created_at: ended, updated_at: ended,
      }).execute()
    }
    const body = JSON.stringify(processed('evt_q', 'call.no_answer', 'c1').event)
    await db.insertInto('webhook_events').values({
      event_id: 'evt_q', target: 'formant', event_type: 'call.no_answer', conversation_id: 'c1', trace_id: 'tr_c1', agent_id: 101, body,
      headers: '{}', source: 'webhook', received_at: t - 3_000_000, status: 'processed', attempts: 1, next_attempt_at: t, claimed_by: null,
      claimed_until: null, last_error: null, processed_at: t,
    }).execute()
    await db.insertInto('calls').values({
      id: 'call_1', tenant: 'acme', agent_id: 101, customer_phone: '+919876543215', idempotency_key: 'k1', trace_id: 'tr_c1',
      conversation_id: 'c1', previous_conversation_id: null, scheduled_for: null,
      parameters: JSON.stringify([{ name: 'customer_phone', value: '+919876543215' }]), retry_context: null, metadata: null,
      recipe: 'nightly-batch', campaign: 'leads', status: 'initiated', error: null, created_at: t - 3_700_000, updated_at: t - 3_700_000,
    }).execute()
    folder.write('reader', `import { defineRecipe } from 'switchboard'
export default defineRecipe({
  description: 'reads what is stored',
  async run(ctx) {
    const recent = await ctx.data.conversations({ status: ['no_answer', 'busy', 'completed'], endedSince: ctx.now.getTime() - 86_400_000 })
    const one = await ctx.data.conversation('c1')
    const events = await ctx.data.events({ type: 'call.no_answer' })
    const calls = await ctx.data.calls({ recipe: 'nightly-batch' })
    const runs = ((await ctx.state.get<number>('runs')) ?? 0) + 1
    await ctx.state.set('runs', runs)
    return {
      recent: recent.map((c) => c.conversation_id),
      transcript: one?.transcript?.[0]?.message,
      final: one?.retry?.is_final_attempt,
      phone: events[0]?.event.data.call.to_phone,
      callPhone: calls[0]?.parameters[0]?.value,
      missing: (await ctx.data.conversation('nope')) ?? null,
      runs,
    }
  },
})
`)
    const engine = createRecipeEngine(rt)
    cleanups.push(() => engine.stop())
    expect(JSON.parse((await engine.run('reader')).summary!)).toEqual({
      recent: ['c2', 'c1'], transcript: 'hello', final: true, phone: '+919876543215', callPhone: '+919876543215', missing: null, runs: 1,
    })
    expect(JSON.parse((await engine.run('reader', { dryRun: true })).summary!).runs).toBe(2)
    const stored = await db.selectFrom('kv_state').select(['namespace', 'key', 'value']).where('namespace', '=', 'recipe:reader').execute()
    expect(stored).toEqual([{ namespace: 'recipe:reader', key: 'runs', value: '2' }])
  })
})
