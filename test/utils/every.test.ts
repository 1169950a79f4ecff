import { describe, expect, it } from 'vitest'
import { createManualClock } from '../../src/utils/clock.ts'
import { createSilentLogger } from '../../src/utils/logger.ts'
import { every } from '../../src/utils/every.ts'

describe('every', () => {
  it('runs the job first after firstMs, then everyMs after each run ends, never overlapping', async () => {
    const clock = createManualClock()
    const started: number[] = []
    const stop = every(clock, createSilentLogger(), 'job', 1_000, 5_000, async () => {
      started.push(clock.now())
    })
    await clock.advance(12_000)
    const t0 = new Date('2026-01-01T00:00:00Z').getTime()
    expect(started).toEqual([t0 + 1_000, t0 + 6_000, t0 + 11_000])
    await stop()
    await clock.advance(60_000)
    expect(started).toHaveLength(3)
  })

  it('stopping aborts the signal of a run in progress and waits for it to end', async () => {
    const clock = createManualClock()
    let sawAbort = false
    const stop = every(clock, createSilentLogger(), 'long job', 1_000, 5_000, (signal) => {
      // A long job (a purge) that goes on until it is told to stop.
      return new Promise<void>((resolve) =>
        signal.addEventListener('abort', () => {
          sawAbort = true
          resolve()
        }),
      )
    })
    await clock.advance(1_000)
    expect(sawAbort).toBe(false)
    await stop()
    expect(sawAbort).toBe(true)
  })
})
