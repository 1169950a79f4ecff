import { afterEach, expect, it } from 'vitest'
import { addToDnc } from '../../src/campaigns/dnc.ts'
import { flashMessage } from '../../src/ui/flash.ts'
import { createManualClock } from '../../src/utils/clock.ts'
import { captureLogs } from '../helpers/log-capture.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { callRow } from '../reports/seed.ts'

/**
 * A follow-up due later than a minute goes to the provider at once with its `scheduled_for`, and the provider's API
 * cannot cancel it: a number put on the do-not-call list meanwhile was rung at that time without a word anywhere.
 */
let rt: TestRuntime | undefined
afterEach(async () => {
  await rt?.close()
  rt = undefined
})

const NOW = Date.parse('2026-03-10T06:00:00Z')

it('adding a number with calls already scheduled with the provider says so: the log names them, the dashboard counts them', async () => {
  const logs = captureLogs('warn')
  rt = await createTestRuntime({ log: logs.log, clock: createManualClock(NOW) })
  const row = (id: string, status: string, scheduledFor: number | null, phone = '+919800000000') => ({ ...callRow({ id, trace_id: `T-${id}`, recipe: 'no-answer-followup', campaign: 'spring', status, created_at: NOW - 60_000 }), customer_phone: phone, customer_key: phone, scheduled_for: scheduledFor })
  await rt.store.db.insertInto('calls').values([
    row('ahead', 'scheduled', NOW + 3 * 60_000),
    // Its time has passed (the provider has placed it), it was never handed over, or it is another contact's.
    row('past', 'scheduled', NOW - 60_000),
    row('queued', 'queued', NOW + 3 * 60_000),
    row('other', 'scheduled', NOW + 3 * 60_000, '+919800000001'),
  ]).execute()
  expect(await addToDnc(rt, '098000 00000', { source: 'dashboard' })).toEqual({ added: true, phone: '+919800000000', scheduledWithProvider: 1 })
  expect(logs.find(/calls already scheduled with the provider/)).toEqual([
    expect.objectContaining({ level: 40, scheduled: 1, calls: [{ trace_id: 'T-ahead', scheduled_for: new Date(NOW + 3 * 60_000).toISOString() }], source: 'dashboard' }),
  ])
  // Listed already: nothing new to say.
  expect(await addToDnc(rt, '+919800000000')).toEqual({ added: false, phone: '+919800000000', scheduledWithProvider: 0 })
  expect(logs.find(/calls already scheduled with the provider/)).toHaveLength(1)

  expect(flashMessage(new URLSearchParams('done=dnc-added&n=1&k=1'))).toBe(
    "Added to the do-not-call list. 1 call(s) to it were already scheduled with the provider, which its API cannot cancel: cancel them in the provider's dashboard (the Calls page lists them as scheduled).",
  )
  expect(flashMessage(new URLSearchParams('done=dnc-added&n=1&k=0'))).toBe('Added to the do-not-call list.')
})
