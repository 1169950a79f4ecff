import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { loadConfig } from '../../src/config/load.ts'
import { openStore } from '../../src/db/connect.ts'
import { createRuntime, type Runtime } from '../../src/runtime.ts'
import type { Clock } from '../../src/utils/clock.ts'
import type { WebhookEvent } from '../../src/upstream/schemas.ts'
import type { PipelineEvent, ProcessedEvent } from '../../src/events/hooks.ts'
import { createSilentLogger } from '../../src/utils/logger.ts'
import { createSeededRandom } from '../../src/utils/random.ts'

/** A recipes folder outside the repository: `switchboard` must still resolve to the running service. */
export function tempRecipesDir(): { dir: string; write(name: string, source: string): string; cleanup(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'sb-recipes-'))
  return {
    dir,
    write(name, source) {
      const file = join(dir, `${name}.ts`)
      // A helper in a sub-folder (`lib/helper`) gets its folder.
      mkdirSync(dirname(file), { recursive: true })
      writeFileSync(file, source)
      return file
    },
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  }
}

/** A recipe that returns its trigger and clock time, so tests can read when it ran from the run records. */
export function tickRecipe(options: { schedule: string; timezone?: string; description?: string }): string {
  return `import { defineRecipe } from 'switchboard'
export default defineRecipe({
  description: ${JSON.stringify(options.description ?? 'records its ticks')},
  schedule: ${JSON.stringify(options.schedule)},
  ${options.timezone ? `timezone: ${JSON.stringify(options.timezone)},` : ''}
  run(ctx) {
    return { at: ctx.trigger.scheduledAt ? new Date(ctx.trigger.scheduledAt).toISOString() : null, now: ctx.now.toISOString(), tz: ctx.timezone }
  },
})
`
}

/**
 * A clock for end-to-end tests over real sockets: time flows at real speed from `start`, and `jumpTo`
 * moves it forward at once. Timers are kept by due time, so after a jump each one due fires once (a
 * 1-second poll does not replay the hours skipped) — the way a machine waking from sleep behaves.
 */
export interface WarpClock {
  now(): number
  setTimeout(fn: () => void, ms: number): () => void
  jumpTo(at: number | string): void
}

export function createWarpClock(start: number | string): WarpClock {
  let offset = (typeof start === 'number' ? start : Date.parse(start)) - Date.now()
  const now = () => Date.now() + offset
  interface Timer { at: number; fn: () => void; handle?: ReturnType<typeof setTimeout> }
  const timers = new Set<Timer>()
  const arm = (t: Timer) => {
    if (t.handle) clearTimeout(t.handle)
    t.handle = setTimeout(() => {
      if (now() < t.at) return arm(t)
      timers.delete(t)
      t.fn()
    }, Math.min(Math.max(0, t.at - now()), 2 ** 31 - 1))
    t.handle.unref?.()
  }
  return {
    now,
    setTimeout(fn, ms) {
      const t: Timer = { at: now() + Math.max(0, ms), fn }
      timers.add(t)
      arm(t)
      return () => {
        if (t.handle) clearTimeout(t.handle)
        timers.delete(t)
      }
    },
    jumpTo(at) {
      const target = typeof at === 'number' ? at : Date.parse(at)
      offset += Math.max(0, target - now())
      for (const t of timers) arm(t)
    },
  }
}

/** A point where a fixture recipe's run waits until the test lets it go. */
export interface RunHold {
  started: boolean
  release(): void
}

/**
 * Holds on runs of a fixture recipe, keyed by whatever the recipe names (its trigger type, `dry`): the recipe file
 * and the test meet on `globalThis[name]`, the recipe waiting at `waitSource`. Release them all after each test —
 * a run still held would keep its engine from stopping.
 */
export function createRunHolds(name: string) {
  const shared = globalThis as unknown as Record<string, Map<string, RunHold> | undefined>
  const map = () => (shared[name] ??= new Map())
  const made: RunHold[] = []
  return {
    map,
    /** The next run with this key waits until `release()`. */
    hold(key: string): RunHold {
      const h: RunHold = { started: false, release: () => {} }
      map().set(key, h)
      made.push(h)
      return h
    },
    releaseAll(): void {
      map().clear()
      for (const h of made.splice(0)) h.release()
    },
    /** The recipe's side, for its `run(ctx)`: waits at the hold of its run's key (dry runs are `dry`). */
    waitSource: `const key = ctx.dryRun ? 'dry' : ctx.trigger.type
    const h = globalThis.${name}?.get(key)
    if (h) {
      globalThis.${name}.delete(key)
      h.started = true
      await new Promise((resolve) => { h.release = () => resolve(undefined) })
    }`,
  }
}

/** What gated fixture runs note on `globalThis[name]` (see `gatedRun`): who is running, in what order, and their gates. */
export interface GatedRuns {
  running: Set<string>
  log: string[]
  gates: Map<string, () => void>
}

/**
 * A fixture recipe's `run` (source text) that notes on `globalThis[name]` (GatedRuns) what runs beside it — `start
 * <label> beside [<labels>]`, then `end <label>` — and waits until the test opens its gate: `gates.get(label)()`.
 * `label` is a JavaScript expression of `ctx` (`ctx.name + ':' + ctx.trigger.type`).
 */
export function gatedRun(name: string, label: string): string {
  return `async run(ctx) {
    const s = globalThis.${name}
    const label = ${label}
    s.log.push('start ' + label + ' beside [' + [...s.running].join(' ') + ']')
    s.running.add(label)
    await new Promise((resolve) => s.gates.set(label, resolve))
    s.running.delete(label)
    s.log.push('end ' + label)
    return null
  },`
}

/** Another process on the same database and clock (a replica, or the service beside a CLI); closed by `cleanups`. */
export async function openReplica(
  rt: { store: { url: string; schema: string | undefined }; dataDir: string },
  options: { recipesDir: string; clock: Clock; seed: number; env?: Record<string, string>; cleanups: Array<() => Promise<void> | void> },
): Promise<Runtime> {
  const store = await openStore(rt.store.url, { schema: rt.store.schema })
  const other = await createRuntime(loadConfig({ env: { DATA_DIR: rt.dataDir, RECIPES_DIR: options.recipesDir, LOG_LEVEL: 'silent', ...options.env } }), {
    store, skipMigrate: true, clock: options.clock, random: createSeededRandom(options.seed), log: createSilentLogger(),
  })
  options.cleanups.push(async () => {
    await other.close()
    await store.close()
  })
  return other
}

/** A provider event as processing hands it to consumers. */
export function processed(eventId: string, type: WebhookEvent['event_type'], conversationId = 'conv_1'): ProcessedEvent {
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

/** Stores events as the receiver would (recipes read events queued by another replica back from storage). */
export async function storeEvents(rt: Runtime, events: PipelineEvent[]): Promise<void> {
  await rt.store.db.insertInto('webhook_events').values(events.map((e) => ({
    event_id: e.eventId, target: e.target, event_type: e.eventType, conversation_id: null, trace_id: null, agent_id: null,
    body: JSON.stringify(e.kind === 'target' ? e.body : e.event), headers: '{}', source: 'webhook', received_at: e.receivedAt,
    status: 'processed', attempts: 1, next_attempt_at: 0, claimed_by: null, claimed_until: null, last_error: null, processed_at: e.receivedAt,
  }))).onConflict((oc) => oc.column('event_id').doNothing()).execute()
}

/** What processing does with a claimed batch after the read model: hand it to every registered consumer. */
export async function deliver(rt: Runtime, batch: PipelineEvent[]): Promise<void> {
  await storeEvents(rt, batch)
  for (const { consume } of rt.hooks.list()) await consume(batch)
}

/** An event recipe that throws until its state says the CRM is `up`; it returns the ids of the events it ran on. */
export const CRM_RECIPE = `import { defineRecipe } from 'switchboard'
export default defineRecipe({
  description: 'fails while the CRM is down',
  on: ['call.no_answer'],
  async run(ctx) {
    if (!(await ctx.state.get<boolean>('up'))) throw new Error('CRM is down')
    return ctx.trigger.events!.map((e) => e.eventId).join(',')
  },
})
`

/** An event recipe that always succeeds, returning the ids of the events it ran on. */
export const STEADY_RECIPE = `import { defineRecipe } from 'switchboard'
export default defineRecipe({ description: 'fine', on: ['call.no_answer'], run: (ctx) => ctx.trigger.events!.map((e) => e.eventId).join(',') })
`
