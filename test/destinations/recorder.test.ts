import { afterEach, describe, expect, it } from 'vitest'
import type { AttemptRecord, ClaimedDelivery } from '../../src/destinations/outbox.ts'
import { createAttemptRecorder } from '../../src/destinations/recorder.ts'
import { deliveryId } from '../../src/destinations/sign.ts'
import type { Runtime } from '../../src/runtime.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'

import { vi } from 'vitest'

/**
 * An outcome that arrives just as a commit of outcomes ends — after the commit loop's last look, before it has finished —
 * is committed at once, not left until some later outcome comes (perhaps none: its claim would lapse and the delivery
 * be sent a second time).
 */
describe('the attempt recorder [sqlite]', () => {
  let rt: TestRuntime | undefined
  afterEach(async () => {
    await rt?.close()
    rt = undefined
  })

  for (const depth of [0, 1, 2, 3, 4, 5]) {
    it(`an outcome pushed ${depth} microtasks after a commit finishes is still committed`, async () => {
      rt = await createTestRuntime({ dialect: 'sqlite' })
      const at = rt.clock.now()
      const ids = ['evt_a', 'evt_b'].map((e) => deliveryId('crm', e))
      await rt.store.db.insertInto('destination_deliveries').values(ids.map((id, i) => ({
        id, destination: 'crm', event_id: `evt_${i}`, event_type: 'call.completed', conversation_id: null, payload: '',
        order_at: at * 1000 + i, ordered: 0, status: 'pending', attempts: 0, round_attempts: 0, next_attempt_at: at, claimed_by: 'me',
        claimed_until: at + 60_000, last_status: null, last_error: null, created_at: at, delivered_at: null,
      }))).execute()
      const claimed = (id: string): ClaimedDelivery => ({ id, rowid: null, event_id: 'x', event_type: 'call.completed', order_at: 0, attempts: 0, round_attempts: 0, claimed_until: 0, payload: '{}' })
      const delivered = (id: string): AttemptRecord => ({ row: claimed(id), result: 'delivered', startedAt: 0, latencyMs: 3, status: 200, error: null, response: null, nextAttemptAt: 0, countsInRound: true })

      // The database handle as the recorder sees it, with a hook on the commit's completion: another lane's outcome
      // that lands in the same turn of the event loop (an answer whose continuation runs just then).
      let hook: (() => void) | undefined
      const real = rt.store.db
      const db = new Proxy(real, {
        get(target, key) {
          if (key === 'connection') {
            return () => {
              const builder = target.connection()
              return {
                execute<T>(cb: (c: unknown) => Promise<T>) {
                  const p = builder.execute(cb as never) as Promise<T>
                  const h = hook
                  hook = undefined
                  if (h) void p.then(h)
                  return p
                },
              }
            }
          }
          const v = Reflect.get(target, key)
          return typeof v === 'function' ? v.bind(target) : v
        },
      })
      const wrapped = { ...rt, store: Object.assign(Object.create(Object.getPrototypeOf(rt.store)), rt.store, { db }) } as Runtime
      const recorder = createAttemptRecorder(wrapped, 'me', () => {})
      hook = () => {
        let p = Promise.resolve()
        for (let i = 0; i < depth; i++) p = p.then(() => {})
        void p.then(() => recorder.push(delivered(ids[1]!)))
      }
      recorder.push(delivered(ids[0]!))
      // Nothing else comes (the last answers of a burst): both are recorded all the same.
      await vi.waitFor(async () => {
        const rows = await real.selectFrom('destination_deliveries').select(['id', 'status']).orderBy('order_at').execute()
        expect(rows.map((r) => r.status)).toEqual(['delivered', 'delivered'])
      })
      expect(recorder.busy()).toBe(false)
    })
  }
})
