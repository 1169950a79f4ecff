import { expect, it } from 'vitest'
import { createManualClock } from '../../src/utils/clock.ts'
import { writeAgain } from '../../src/utils/write-again.ts'

/** A write the database refuses `times` times, then takes. */
function refused(times: number) {
  let calls = 0
  return {
    calls: () => calls,
    write: async () => {
      calls++
      if (calls <= times) throw new Error(`refused (${calls})`)
      return 'written'
    },
  }
}

it('writes again on the clock until the database takes it, telling of the first failure once', async () => {
  const clock = createManualClock(0)
  const db = refused(2)
  const told: unknown[] = []
  const done = writeAgain(clock, db.write, { tries: 5, everyMs: 1_000, onFirstFailure: (e) => told.push(e) })
  await clock.advance(999)
  expect(db.calls()).toBe(1)
  await clock.advance(1_001)
  await expect(done).resolves.toBe('written')
  expect([db.calls(), told.length]).toEqual([3, 1])
})

it('gives up with the last error when out of tries, when the work is no longer ours, or when stopped', async () => {
  const clock = createManualClock(0)
  const outOfTries = refused(10)
  const tries = writeAgain(clock, outOfTries.write, { tries: 3, everyMs: 1_000 })
  const settled = expect(tries).rejects.toThrow('refused (3)')
  await clock.advance(2_000)
  await settled
  // Another process holds the claim now: no second try.
  const taken = refused(10)
  const notOurs = writeAgain(clock, taken.write, { tries: 5, everyMs: 1_000, stillOurs: async () => false })
  const gaveUp = expect(notOurs).rejects.toThrow('refused (1)')
  await clock.advance(1_000)
  await gaveUp
  // A check that fails itself (the database still down) keeps trying.
  const down = refused(1)
  const checkFails = writeAgain(clock, down.write, { tries: 5, everyMs: 1_000, stillOurs: async () => Promise.reject(new Error('down')) })
  await clock.advance(1_000)
  await expect(checkFails).resolves.toBe('written')
  // Stopping ends the wait at once, without another try.
  const stop = new AbortController()
  const stopped = refused(10)
  const waiting = writeAgain(clock, stopped.write, { tries: 5, everyMs: 60_000, signal: stop.signal })
  const ended = expect(waiting).rejects.toThrow('refused (1)')
  await new Promise((resolve) => setImmediate(resolve))
  stop.abort()
  await ended
  expect(stopped.calls()).toBe(1)
})

it('throws at once a failure that writing again would not mend (retryable says no), before telling of it', async () => {
  const clock = createManualClock(0)
  let calls = 0
  const told: unknown[] = []
  const constraint = Object.assign(new Error('violates a constraint'), { code: '23514' })
  const dropped = new Error('Connection terminated unexpectedly')
  const failures = [dropped, constraint]
  const write = async () => {
    throw failures[calls++]!
  }
  const done = writeAgain(clock, write, { tries: 5, everyMs: 1_000, retryable: (e) => e === dropped, onFirstFailure: (e) => told.push(e) })
  const settled = expect(done).rejects.toBe(constraint)
  // The dropped connection is tried again a second later; the constraint it meets then ends the tries.
  await clock.advance(1_000)
  await settled
  expect([calls, told]).toEqual([2, [dropped]])
})
