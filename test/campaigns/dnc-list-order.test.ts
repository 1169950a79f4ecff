import { afterEach, expect, it } from 'vitest'
import { addToDnc, listDnc } from '../../src/campaigns/dnc.ts'
import { createManualClock } from '../../src/utils/clock.ts'
import { capturePrepared, queryPlan } from '../helpers/query-plans.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'

let rt: TestRuntime | undefined
afterEach(async () => {
  await rt?.close()
  rt = undefined
})

// The Mail page lists the newest 100 numbers of the do-not-call list. Without an index in that order SQLite sorted the
// whole list at every view (7–8 ms at 100,000 numbers, ten times that at a million); migration 0024 gives it one.
it('lists the do-not-call list newest first, ties by number, read off an index in that order', async () => {
  const clock = createManualClock('2026-03-01T09:00:00Z')
  rt = await createTestRuntime({ clock, env: { DEFAULT_COUNTRY: 'IN' } })
  await addToDnc(rt, '+919800000002', { reason: 'first' })
  await clock.advance(1_000)
  await addToDnc(rt, '+919800000009', { reason: 'same second, higher' })
  await addToDnc(rt, '+919800000003', { reason: 'same second, lower' })
  await clock.advance(1_000)
  await addToDnc(rt, '+919800000001', { reason: 'newest' })

  const prepared = capturePrepared(rt.store.sqlite!)
  let entries: Awaited<ReturnType<typeof listDnc>>
  try {
    entries = await listDnc(rt, { limit: 3 })
  } finally {
    prepared.stop()
  }
  expect(entries.map((e) => [e.phone, e.reason])).toEqual([
    ['+919800000001', 'newest'],
    ['+919800000003', 'same second, lower'],
    ['+919800000009', 'same second, higher'],
  ])
  const list = prepared.texts.filter((t) => /from "dnc" order by "added_at" desc, "phone"/.test(t))
  expect(list).toHaveLength(1)
  const plan = queryPlan(rt.store.sqlite!, list[0]!, 100).join(' | ')
  expect(plan).toMatch(/\bdnc_added\b/)
  expect(plan).not.toMatch(/TEMP B-TREE/)
})

// "Is this number listed?" typed whole, in any form the list reads: found by the list's key, not by reading every number
// as a part-match (~90 ms at 1,000,000 numbers). Part of a number still matches any number holding those digits.
it('a whole number searched is found by the key, in any form; part of one matches any number holding it', async () => {
  rt = await createTestRuntime({ env: { DEFAULT_COUNTRY: 'IN' } })
  await addToDnc(rt, '+919800000002', { reason: 'asked' })
  await addToDnc(rt, '+919812345678', { reason: 'asked too' })
  const phones = async (search: string) => (await listDnc(rt!, { search })).map((e) => e.phone)
  // The first search prepares the statement (each is prepared once): its plan is read off that.
  const prepared = capturePrepared(rt.store.sqlite!)
  try {
    expect(await phones('+91 98000 00002')).toEqual(['+919800000002'])
  } finally {
    prepared.stop()
  }
  for (const typed of ['+91 98000 00002', '09800000002', '9800000002', '+919800000002']) expect(await phones(typed), typed).toEqual(['+919800000002'])
  expect(await phones('9800000003')).toEqual([])
  expect((await phones('98')).sort()).toEqual(['+919800000002', '+919812345678'])
  expect(await phones('2345')).toEqual(['+919812345678'])

  const byKey = prepared.texts.filter((t) => /from "dnc" where "phone" = \?/.test(t))
  expect(byKey).toHaveLength(1)
  expect(queryPlan(rt.store.sqlite!, byKey[0]!, '+919800000002').join(' | ')).toMatch(/SEARCH dnc USING INDEX sqlite_autoindex_dnc_1 \(phone=\?\)/)
})
