import Database from 'better-sqlite3'
import type { KyselyPlugin, PluginTransformResultArgs, QueryResult, UnknownRow } from 'kysely'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { publishEvent } from '../../src/destinations/publish.ts'
import { startDeliveryWorker, type DeliveryWorker } from '../../src/destinations/worker.ts'
import type { Dialect } from '../../src/db/connect.ts'
import type { Runtime } from '../../src/runtime.ts'
import { createManualClock, type Clock } from '../../src/utils/clock.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { captureLogs } from '../helpers/log-capture.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { destination, startSink, WAIT, type Sink, type SinkBehaviour } from './helpers.ts'

// Real HTTP on a shared, busy machine.
vi.setConfig({ testTimeout: 60_000 })

const TIMEOUT_MS = 2_000
/** What a row needs left of its claim to start: its timeout and the commit's allowance (START_MARGIN_MS). */
const NEEDED_MS = TIMEOUT_MS + 5_000

let rt: TestRuntime | undefined
let worker: DeliveryWorker | undefined
let sink: Sink | undefined
afterEach(async () => {
  await worker?.stop()
  await rt?.close()
  await sink?.close()
  rt = worker = sink = undefined
})

async function setUp(dialect: Dialect, clock: Clock, behaviour?: SinkBehaviour): Promise<TestRuntime> {
  sink = await startSink(behaviour)
  rt = await createTestRuntime({ dialect, clock, env: { ALLOW_PRIVATE_DESTINATIONS: '1', DESTINATIONS: JSON.stringify([destination(sink, { timeoutMs: TIMEOUT_MS })]) } })
  return rt
}

/**
 * The runtime a worker runs on whose delivery claims take `ms` to come back, once, armed by `arm()`: the clock moves
 * on while the claim runs — as when it waits for SQLite's write lock or on a slow round trip to Postgres. On SQLite
 * the claim's UPDATE calls a function that moves the clock (a trigger); on Postgres the claim's result does (a kysely
 * plugin on the worker's connection pool).
 */
function withSlowClaim(base: Runtime, dialect: Dialect, moveClock: () => void): { runtime: Runtime; arm(): void } {
  let armed = false
  const tookLong = () => {
    if (!armed) return
    armed = false
    moveClock()
  }
  const arm = () => void (armed = true)
  if (dialect === 'sqlite') {
    const sqlite = base.store.sqlite!
    sqlite.function('test_claim_took_long', () => {
      tookLong()
      return 0
    })
    sqlite.exec(`create temp trigger test_claim_took_long after update of claimed_until on destination_deliveries
      when new.claimed_by is not null begin select test_claim_took_long(); end`)
    return { runtime: base, arm }
  }
  const plugin: KyselyPlugin = {
    transformQuery: (args) => args.node,
    async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
      // The claim is the statement that returns claimed rows (with their claim's end).
      if (args.result.rows[0] && 'claimed_until' in args.result.rows[0]) tookLong()
      return args.result
    },
  }
  return { runtime: { ...base, store: { ...base.store, db: base.store.db.withPlugin(plugin) } }, arm }
}

describeEachDialect('destinations: a claim that took long', (dialect) => {
  it('a row whose claim came back with less than its timeout and the commit allowance left is not started on it, but claimed afresh', async () => {
    const manual = createManualClock()
    let moved = 0
    const clock: Clock = { now: () => manual.now() + moved, setTimeout: (fn, ms, options) => manual.setTimeout(fn, ms, options) }
    // What each request had left of its delivery's claim when it arrived.
    const left: number[] = []
    const base = await setUp(dialect, clock, (_n, _req, res) => {
      void base.store.db.selectFrom('destination_deliveries').select('claimed_until').executeTakeFirstOrThrow().then((row) => {
        left.push(Number(row.claimed_until) - clock.now())
        res.writeHead(204).end()
      })
    })
    // The claim (timeout + 15 s) comes back 12 s later: 5 s left, less than a request's 2 s and the 5 s allowance.
    const slow = withSlowClaim(base, dialect, () => (moved += 12_000))
    worker = startDeliveryWorker(slow.runtime)
    await worker.idle()
    await publishEvent(base, 'no-answer-followup', 'followup.scheduled', { n: 1 }, { conversationId: 'conv-1_1' })
    slow.arm()
    worker.wake()
    await worker.idle()
    // At the next sweep it is claimed again, with the whole claim ahead of it, and sent.
    await manual.advance(250)
    await vi.waitFor(() => expect(sink!.requests).toHaveLength(1), WAIT)
    await worker.idle()
    expect(left).toHaveLength(1)
    expect(left[0]).toBeGreaterThanOrEqual(NEEDED_MS)
    expect(await base.store.db.selectFrom('destination_deliveries').select(['status', 'attempts']).execute()).toEqual([{ status: 'delivered', attempts: 1 }])
  })
})

describe('destinations: idle lanes [sqlite]', () => {
  it('an idle lane looks for due deliveries without taking SQLite\'s write lock; once one is due it claims and sends it', async () => {
    const clock = createManualClock()
    const base = await setUp('sqlite', clock)
    const logs = captureLogs('warn')
    worker = startDeliveryWorker({ ...base, log: logs.log })
    await worker.idle()
    // Another connection holds the write lock (the receiver's commit, say) while the idle lane sweeps.
    const other = new Database(base.store.url.slice('sqlite:'.length))
    try {
      other.prepare('begin immediate').run()
      for (let i = 0; i < 2; i++) await clock.advance(250)
      await worker.idle()
      // Two sweeps, neither waiting for the lock (a wait gives up after 5 s with SQLITE_BUSY, and is logged).
      expect(logs.find(/could not claim/)).toEqual([])
      other.prepare('rollback').run()
    } finally {
      other.close()
    }
    await publishEvent(base, 'no-answer-followup', 'followup.scheduled', { n: 1 })
    worker.wake()
    await vi.waitFor(() => expect(sink!.requests).toHaveLength(1), WAIT)
  })
})
