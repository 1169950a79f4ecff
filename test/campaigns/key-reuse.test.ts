import { afterEach, expect, it } from 'vitest'
import { scheduleCall } from '../../src/campaigns/index.ts'
import type { Effects } from '../../src/effects.ts'
import { createManualClock } from '../../src/utils/clock.ts'
import { captureLogs } from '../helpers/log-capture.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'

let rt: TestRuntime | undefined
afterEach(async () => {
  await rt?.close()
  rt = undefined
})
const live = (): Effects => ({ dryRun: false, plan: [] })

// A recipe whose key's parts leave the contact out gives every contact the first one's key: each later call is a
// duplicate — the provider would refuse it the same way — and was said nowhere but in the outcome the recipe ignored.
it('a duplicate key first used for another number is still a duplicate, and said in the log naming the earlier call', async () => {
  const logs = captureLogs('info')
  rt = await createTestRuntime({ log: logs.log, clock: createManualClock('2026-03-02T06:00:00Z'), env: { DEFAULT_COUNTRY: 'IN' } })
  const first = await scheduleCall(rt, { agentId: 101, phone: '+919876543210', idempotencyKey: 'spring-campaign' }, live(), { recipe: 'spring' })
  expect(first.status).toBe('queued')
  const same = await scheduleCall(rt, { agentId: 101, phone: '+919876543210', idempotencyKey: 'spring-campaign' }, live(), { recipe: 'spring' })
  expect(same.status).toBe('duplicate')
  expect(logs.lines.filter((l) => /idempotency key/.test(String(l.msg)))).toEqual([])

  const other = await scheduleCall(rt, { agentId: 101, phone: '+919876543211', idempotencyKey: 'spring-campaign' }, live(), { recipe: 'spring' })
  expect(other.status).toBe('duplicate')
  const earlierId = first.status === 'queued' ? first.record.id : ''
  const warned = logs.lines.filter((l) => /idempotency key/.test(String(l.msg)))
  expect(warned).toHaveLength(1)
  expect(warned[0]).toMatchObject({ level: 40, recipe: 'spring', idempotency_key: 'spring-campaign', earlier_call: earlierId })
  expect(String(warned[0]!.msg)).toContain(`a call to another number already used this idempotency key (call ${earlierId}): this one is not placed`)
  // The number is not in the line (the log goes where phone numbers need not).
  expect(JSON.stringify(warned[0])).not.toContain('9876543211')
})
