import { afterEach, expect, it } from 'vitest'
import { startWorker } from '../../src/webhooks/worker.ts'
import { createManualClock } from '../../src/utils/clock.ts'
import { REPEATED_ERROR_WINDOW_MS } from '../../src/utils/repeated-error-log.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { captureLogs } from '../helpers/log-capture.ts'

let rt: TestRuntime | undefined
afterEach(async () => {
  await rt?.close()
  rt = undefined
})

/**
 * With the database down, the webhook worker's sweep failed every second and logged each time — with the call queue
 * and each recipe's queue, ~11,000 lines an hour a replica (an operator probe), burying the lines the README points
 * to. The same failure is logged once, then once per window with how many were left out.
 */
it('a background loop failing the same way every second logs it once, then once a window with the count left out', async () => {
  const clock = createManualClock('2026-03-01T10:00:00Z')
  const logs = captureLogs('error')
  rt = await createTestRuntime({ clock, env: { RECONCILE_INTERVAL_SECONDS: '0' } })
  const runtime = { ...rt, log: logs.log }
  // The claim's table gone: every sweep's claim fails the same way.
  await rt.store.db.schema.alterTable('webhook_events').renameTo('webhook_events_away').execute()
  const worker = startWorker(runtime)
  try {
    for (let second = 0; second < 65; second++) {
      await clock.advance(1_000)
      await worker.idle()
    }
  } finally {
    await worker.stop()
    await rt.store.db.schema.alterTable('webhook_events_away').renameTo('webhook_events').execute()
  }
  const lines = logs.find(/webhook worker could not claim events/)
  // 65 failures (one a sweep) in 65 s: at 0 s, then at 30 s and 60 s, each saying how many it left out.
  expect(REPEATED_ERROR_WINDOW_MS).toBe(30_000)
  expect(lines.length).toBe(3)
  expect(lines[0]).not.toHaveProperty('not_logged_since')
  expect(lines.slice(1).map((l) => l.not_logged_since)).toEqual([expect.any(Number), expect.any(Number)])
  expect((lines[1]!.not_logged_since as number) + (lines[2]!.not_logged_since as number)).toBeGreaterThan(50)
})
