import { describe, expect, it } from 'vitest'
import { claimSize, createReceivingCheck, createYieldGate, HOLD_MAX_MS, LOOP_BUSY_SHARE, QUIET_MS, RECEIVING_FOR_MS, setReceivingCheck, trackReceiverLoad } from '../../src/coordination/receiver-load.ts'
import type { Runtime } from '../../src/runtime.ts'
import { createManualClock } from '../../src/utils/clock.ts'

describe('receiver first during a burst', () => {
  /**
   * `whileAsleep` runs as the gate's clock moves on (a receiver that goes on committing); `loop` is the share
   * of each window the receiver's event loop was busy (the real one would make these tests depend on the host).
   */
  const setup = (aboveRate: number, whileAsleep?: () => void, loop: () => number = () => 0) => {
    const clock = createManualClock('2026-03-01T10:00:00Z')
    const load = trackReceiverLoad(aboveRate, { loopBusyShare: loop })
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

  it('holds processing back while the receiver is above it, for as long as deliveries go on', async () => {
    // After the fast commits the receiver goes on committing a delivery at every look. Each commit while the
    // fast ones are inside the 250 ms window finds the rate above the threshold: busy until 100 ms after the
    // last of those (the gate looks again every 10 ms).
    let clockRef: { now(): number } | undefined
    let loadRef: ReturnType<typeof trackReceiverLoad> | undefined
    const { clock, load, gate, slept } = setup(3_000, () => loadRef!.committed(1, clockRef!.now()))
    clockRef = clock
    loadRef = load
    load.committed(400, clock.now())
    load.committed(400, clock.now() + 1)
    let passed = false
    const waiting = gate().then(() => (passed = true))
    await Promise.resolve()
    expect(passed).toBe(false)
    await waiting
    expect(slept.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(340)
    expect(slept.reduce((a, b) => a + b, 0)).toBeLessThan(360)
  })

  it('lets processing go QUIET_MS after the last delivery of a burst, before its "busy until"', async () => {
    // Deliveries go on for 40 ms after the fast commits, then stop: no wait for the rest of the 100 ms.
    let clockRef: { now(): number } | undefined
    let loadRef: ReturnType<typeof trackReceiverLoad> | undefined
    let last = 0
    const { clock, load, gate } = setup(3_000, () => {
      if (clockRef!.now() - started > 40) return
      last = clockRef!.now()
      loadRef!.committed(1, last)
    })
    clockRef = clock
    loadRef = load
    load.committed(400, clock.now())
    load.committed(400, clock.now() + 1)
    const started = clock.now()
    await gate()
    expect(last - started).toBe(40)
    expect(clock.now() - last).toBeGreaterThanOrEqual(QUIET_MS)
    expect(clock.now() - last).toBeLessThan(QUIET_MS + 10)
    expect(clock.now() - started).toBeLessThan(100)
  })

  it('keeps processing held while a batch is still being written (a slow commit), then lets it go', async () => {
    let clockRef: { now(): number } | undefined
    let loadRef: ReturnType<typeof trackReceiverLoad> | undefined
    let started = 0
    // A commit that takes 60 ms (a slow disk's fsync): nothing committed meanwhile, deliveries still arriving.
    const { clock, load, gate } = setup(3_000, () => {
      if (clockRef!.now() - started >= 60) loadRef!.writing(false, clockRef!.now())
    })
    clockRef = clock
    loadRef = load
    load.committed(400, clock.now())
    load.committed(400, clock.now() + 1)
    started = clock.now()
    load.writing(true, started)
    await gate()
    // Held through the write (past QUIET_MS), let go once it ended and nothing was committed for QUIET_MS since.
    expect(clock.now() - started).toBeGreaterThanOrEqual(60)
    expect(clock.now() - started).toBeLessThan(80)
  })

  it('reports each hold once, from the first part of processing held back to the last one let go', async () => {
    const clock = createManualClock('2026-03-01T10:00:00Z')
    const load = trackReceiverLoad(3_000, { loopBusyShare: () => 0 })
    const holds: Array<[boolean, number]> = []
    const gate = createYieldGate(load.shared, {
      now: () => clock.now(),
      sleep: (ms) => clock.advance(ms),
      onHold: (holding, heldMs) => void holds.push([holding, heldMs]),
    })
    // Quiet: nothing to report.
    await gate()
    expect(holds).toEqual([])
    // A burst: the webhook worker and the call queue wait together; one hold, ended when both go.
    load.committed(800, clock.now())
    const started = clock.now()
    await Promise.all([gate(), gate()])
    expect(holds).toHaveLength(2)
    expect(holds[0]).toEqual([true, 0])
    expect(holds[1]![0]).toBe(false)
    expect(holds[1]![1]).toBe(clock.now() - started)
    // No delivery after that commit: the burst is over QUIET_MS later.
    expect(holds[1]![1]).toBeGreaterThanOrEqual(QUIET_MS)
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
    const load = trackReceiverLoad(1_000, { loopBusyShare: () => 0 })
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

  it('holds processing back while the receiver\'s event loop is saturated, below the rate threshold too', async () => {
    // A slow host: 2,000 deliveries a second (below 3,000, above half of it) with the loop busy the whole time.
    const shares: number[] = []
    // Deliveries go on arriving while processing holds back (one at each of its looks).
    let clockRef: { now(): number } | undefined
    let loadRef: ReturnType<typeof trackReceiverLoad> | undefined
    let trickle = false
    const { clock, load, gate, slept } = setup(3_000, () => trickle && loadRef!.committed(1, clockRef!.now()), () => {
      shares.push(1)
      return 1
    })
    clockRef = clock
    loadRef = load
    load.committed(250, clock.now()) // the first look covers the time since start-up: never a verdict
    await gate()
    expect(slept).toEqual([])
    await clock.advance(250)
    load.committed(500, clock.now())
    // The loop is looked at once a window, not at every commit.
    load.committed(1, clock.now() + 10)
    expect(shares).toHaveLength(2)
    trickle = true
    let passed = false
    const waiting = gate().then(() => (passed = true))
    await Promise.resolve()
    expect(passed).toBe(false)
    await waiting
    // Busy lasts one window and 100 ms after the look that found the loop saturated.
    const held = slept.reduce((a, b) => a + b, 0)
    expect(held).toBeGreaterThanOrEqual(350)
    expect(held).toBeLessThan(400)
  })

  it('lets processing run while the loop is busy for less than the share', async () => {
    const { clock, load, gate, slept } = setup(3_000, undefined, () => LOOP_BUSY_SHARE - 0.01)
    for (let i = 0; i < 10; i++) {
      load.committed(500, clock.now())
      await clock.advance(250)
    }
    load.committed(500, clock.now())
    await gate()
    expect(slept).toEqual([])
  })

  it('lets processing run while the loop is saturated by other work and deliveries are few', async () => {
    // The proxy relaying processing's own calls keeps the loop busy; 200 deliveries a second is not a burst.
    const { clock, load, gate, slept } = setup(3_000, undefined, () => 1)
    for (let i = 0; i < 10; i++) {
      load.committed(50, clock.now())
      await clock.advance(250)
    }
    load.committed(50, clock.now())
    await gate()
    expect(slept).toEqual([])
    // 1,500 a second is exactly half the threshold (375 in the window that the next look covers): not above it.
    for (let i = 0; i < 5; i++) {
      await clock.advance(50)
      load.committed(75, clock.now())
    }
    await gate()
    expect(slept).toEqual([])
  })

  it('PROCESSING_YIELD_ABOVE=0: never busy, whatever the rate or the loop', async () => {
    const { clock, load, gate, slept } = setup(0, undefined, () => 1)
    for (let i = 0; i < 100; i++) {
      load.committed(400, clock.now())
      await clock.advance(10)
    }
    await gate()
    expect(slept).toEqual([])
  })

  it('claims at most 50 events while the receiver takes deliveries, the whole batch once it is quiet', async () => {
    const clock = createManualClock('2026-03-01T10:00:00Z')
    const load = trackReceiverLoad(3_000, { loopBusyShare: () => 0 })
    // Only identity matters to claimSize: the runtime is the key its check is registered under.
    const rt = {} as Runtime
    expect(claimSize(rt, 500)).toBe(500) // no receiver to yield to (a separate worker process)
    const receiving = createReceivingCheck(load.shared, () => clock.now())
    setReceivingCheck(rt, receiving)
    expect(claimSize(rt, 500)).toBe(500) // nothing committed yet
    load.committed(1, clock.now())
    expect(claimSize(rt, 500)).toBe(50)
    expect(claimSize(rt, 20)).toBe(20)
    await clock.advance(RECEIVING_FOR_MS - 1)
    expect(claimSize(rt, 500)).toBe(50)
    await clock.advance(1)
    expect(claimSize(rt, 500)).toBe(500)
  })

  it('PROCESSING_YIELD_ABOVE=0: whole batches, deliveries or not', () => {
    const clock = createManualClock('2026-03-01T10:00:00Z')
    const load = trackReceiverLoad(0, { loopBusyShare: () => 1 })
    const rt = {} as Runtime
    setReceivingCheck(rt, createReceivingCheck(load.shared, () => clock.now()))
    load.committed(400, clock.now())
    expect(claimSize(rt, 200)).toBe(200)
  })
})

describe('a wall clock stepped back (NTP) just after a burst', () => {
  // The receiver marks its times on the wall clock, and so does the gate; a trickle (50 a second) follows the burst.
  async function longestHold(stepBackMs: number): Promise<{ held: number; longest: number }> {
    let wall = Date.parse('2026-03-01T10:00:00Z')
    let realMs = 0
    const load = trackReceiverLoad(3000, { loopBusyShare: () => 0 })
    for (let i = 0; i < 100; i++) {
      load.committed(100, wall)
      wall += 10
    }
    let stepped = false
    const tick = (ms: number) => {
      wall += ms
      realMs += ms
      if (realMs % 20 === 0) load.committed(1, wall)
      if (!stepped && realMs >= 20) {
        stepped = true
        wall -= stepBackMs
      }
    }
    const gate = createYieldGate(load.shared, { now: () => wall, sleep: async (ms) => tick(ms) })
    let held = 0
    let longest = 0
    while (realMs < 180_000) {
      const before = realMs
      await gate()
      held += realMs - before
      longest = Math.max(longest, realMs - before)
      tick(10)
    }
    return { held, longest }
  }

  it('holds processing back no longer than without the step (it held for the whole two minutes)', async () => {
    const steady = await longestHold(0)
    const stepped = await longestHold(120_000)
    expect(steady.held).toBeLessThan(1_000)
    expect(stepped.held).toBeLessThan(1_000)
    expect(stepped.longest).toBeLessThanOrEqual(HOLD_MAX_MS)
  })
})
