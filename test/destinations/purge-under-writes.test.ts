import Database from 'better-sqlite3'
import type { KyselyPlugin } from 'kysely'
import { afterEach, expect, it } from 'vitest'
import { purgeOldDeliveries } from '../../src/destinations/index.ts'
import { createManualClock } from '../../src/utils/clock.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'

let rt: TestRuntime | undefined
afterEach(async () => {
  await rt?.close()
  rt = undefined
})

const DAY = 86_400_000

// On SQLite a chunk of the purge read its ids and then deleted them: if another connection (the receiver's inbox
// writer) committed in between, the delete could not take the write lock (SQLITE_BUSY_SNAPSHOT) and the run failed.
it('SQLite: the delivery purge is not failed by another connection committing in the middle of a chunk', async () => {
  rt = await createTestRuntime({ dialect: 'sqlite', clock: createManualClock('2026-03-01T00:00:00Z') })
  const old = rt.clock.now() - 40 * DAY
  const rows = Array.from({ length: 3 }, (_, i) => ({
    id: `msg_old_${i}`, destination: 'crm', event_id: `evt_${i}`, event_type: 'call.completed', conversation_id: null, payload: '', order_at: old * 1000 + i,
    status: 'delivered', attempts: 1, round_attempts: 1, next_attempt_at: old, claimed_by: null, claimed_until: null, last_status: 204, last_error: null,
    created_at: old, delivered_at: old,
  }))
  await rt.store.db.insertInto('destination_deliveries').values(rows).execute()
  // The receiver's writer: another connection to the same file, committing whenever the purge is about to delete.
  const other = new Database(rt.store.sqlite!.name)
  other.pragma('busy_timeout = 0')
  let commits = 0
  const between: KyselyPlugin = {
    transformQuery(args) {
      if (args.node.kind === 'DeleteQueryNode') {
        try {
          other.prepare("insert into kv_state (namespace, key, value, updated_at) values ('test', ?, '1', 0)").run(`k${commits}`)
          commits++
        } catch {
          // The purge holds the write lock: this commit waits for it, as the receiver's writer does.
        }
      }
      return args.node
    },
    async transformResult(args) {
      return args.result
    },
  }
  const plain = rt.store.db
  rt.store.db = plain.withPlugin(between)
  try {
    expect(await purgeOldDeliveries(rt)).toMatchObject({ deliveries: 3, skipped: false })
  } finally {
    rt.store.db = plain
    other.close()
  }
  // The other connection did commit while the purge ran (so the test did put a commit in its way).
  expect(commits).toBeGreaterThan(0)
  expect(await rt.store.db.selectFrom('destination_deliveries').select('id').execute()).toEqual([])
})
