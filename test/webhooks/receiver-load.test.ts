import { describe, expect, it } from 'vitest'
import { createYieldGate, HOLD_MAX_MS, trackReceiverLoad } from '../../src/webhooks/receiver-load.ts'
import { createManualClock } from '../../src/utils/clock.ts'

describe('receiver first during a burst', () => {
  /** `whileAsleep` runs as the gate's clock moves on (a receiver that goes on committing). */
  const setup = (aboveRate: number, whileAsleep?: () => void) => {
    const clock = createManualClock('2026-03-01T10:00:00Z')
    const load = trackReceiverLoad(aboveRate)
    const slept: number[] = []
    const gate = createYieldGate(load.shared, {
      now: () => clock.now(),
      sleep: async (ms) => {
        slept.push(ms)
        await clock.advance(ms)
        whileAsleep?.()
      },
    })
    return { clock, load, gate, slept }
  }

  it('lets processing run while the receiver commits at or below the threshold', async () => {
    const { clock, load, gate, slept } = setup(3_000)
    // 750 deliveries in 250 ms is exactly 3,000 a second: not above it.
    for (let i = 0; i < 10; i++) load.committed(75, clock.now() + i * 25)
    await gate()
    expect(slept).toEqual([])
  })

  it('holds processing back while the receiver is above it, and lets it go once the burst ends', async () => {
    const { clock, load, gate, slept } = setup(3_000)
    load.committed(400, clock.now())
    load.committed(400, clock.now() + 1)
    let passed = false
    const waiting = gate().then(() => (passed = true))
    await Promise.resolve()
    expect(passed).toBe(false)
    await waiting
    // Busy lasts 100 ms after the last commit above the rate; the gate looked again every 20 ms.
    expect(slept.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(100)
    expect(slept.reduce((a, b) => a + b, 0)).toBeLessThan(200)
  })

  it('never holds back longer than HOLD_MAX_MS in a row, then runs as long before holding back again', async () => {
    // A stream that never slows: 300 deliveries at every look (15,000 a second).
    let stream = () => {}
    const { clock, load, gate, slept } = setup(1_000, () => stream())
    stream = () => load.committed(300, clock.now())
    stream()
    const started = clock.now()
    await gate()
    expect(clock.now() - started).toBeGreaterThanOrEqual(HOLD_MAX_MS)
    expect(clock.now() - started).toBeLessThan(HOLD_MAX_MS + 50)
    // For the next HOLD_MAX_MS the gate does not wait, however busy the receiver is.
    const looks = slept.length
    await clock.advance(HOLD_MAX_MS - 100)
    stream()
    await gate()
    expect(slept.length).toBe(looks)
    // Afterwards it holds back again.
    await clock.advance(200)
    stream()
    const again = clock.now()
    await gate()
    expect(clock.now() - again).toBeGreaterThanOrEqual(HOLD_MAX_MS)
  })

  it('stops holding back once the thread is stopping', async () => {
    let stopping = false
    const clock = createManualClock('2026-03-01T10:00:00Z')
    const load = trackReceiverLoad(1_000)
    const gate = createYieldGate(load.shared, {
      now: () => clock.now(),
      sleep: async (ms) => {
        await clock.advance(ms)
        load.committed(300, clock.now())
        if (clock.now() - started >= 100) stopping = true
      },
      stopping: () => stopping,
    })
    load.committed(300, clock.now())
    const started = clock.now()
    await gate()
    expect(clock.now() - started).toBeLessThan(200)
  })

  it('PROCESSING_YIELD_ABOVE=0: never busy', async () => {
    const { clock, load, gate, slept } = setup(0)
    for (let i = 0; i < 100; i++) load.committed(400, clock.now())
    await gate()
    expect(slept).toEqual([])
  })
})
