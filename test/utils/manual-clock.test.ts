import { expect, it } from 'vitest'
import { createManualClock } from '../../src/utils/clock.ts'

it('the manual clock reads whole milliseconds, as the system clock does, whatever delays its timers were set with', async () => {
  const clock = createManualClock(1_000)
  const fired: number[] = []
  // A third of a claim's life (10,000 ms / 3), and a delay under a millisecond.
  clock.setTimeout(() => fired.push(clock.now()), 10_000 / 3)
  clock.setTimeout(() => fired.push(clock.now()), 0.4)
  await clock.advance(3_333)
  expect(fired).toEqual([1_001])
  await clock.advance(1)
  // Never before its delay: 3,333.33 ms after 1,000 is 4,334, not 4,333.
  expect(fired).toEqual([1_001, 4_334])
  expect(fired.every(Number.isInteger)).toBe(true)
  expect(Number.isInteger(clock.now())).toBe(true)
})
