import { afterEach, expect, it } from 'vitest'
import { sendTestEvent } from '../../src/destinations/test-send.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { destination, startSink, type Sink } from './helpers.ts'

let rt: TestRuntime | undefined
let sink: Sink | undefined
afterEach(async () => {
  await rt?.close()
  await sink?.close()
  rt = sink = undefined
})

// `destinations test` promises "the same signing, address and redirect rules as real deliveries": real ones carry
// x-switchboard-event-type, and a receiver routing on it (README "What is sent") refused the test event without it.
it('destinations test sends x-switchboard-event-type as real deliveries do', async () => {
  sink = await startSink()
  rt = await createTestRuntime({ env: { ALLOW_PRIVATE_DESTINATIONS: '1', DESTINATIONS: JSON.stringify([destination(sink)]) } })
  const result = await sendTestEvent(rt, rt.config.destinations.list[0]!)
  expect(result.ok).toBe(true)
  expect(sink.requests[0]!.headers['x-switchboard-event-type']).toBe('switchboard.test')
})
