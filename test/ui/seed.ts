import type { RunningServer } from '../../src/server.ts'
import type { ManualClock } from '../../src/utils/clock.ts'
import { signFormant } from '../../src/webhooks/index.ts'
import { makeEvent } from '../webhooks/helpers.ts'

export const UI_SECRET = 'whsec_ui_secret'
export const XSS = '<script>window.__xss = 1</script><img src=x onerror="window.__xss = 2">'

type Overrides = Parameters<typeof makeEvent>[0]

/** Delivers an event through the real receiver, signed the provider's way, timestamped on the clock. */
export async function deliver(server: RunningServer, clock: ManualClock, overrides: Overrides = {}): Promise<string> {
  const event = makeEvent(overrides)
  const body = JSON.stringify(event)
  const res = await fetch(`${server.url}/webhooks/formant`, {
    method: 'POST',
    body,
    headers: {
      'content-type': 'application/json',
      'x-formantai-signature': signFormant(body, UI_SECRET),
      'x-formantai-timestamp': String(Math.floor(clock.now() / 1000)),
      'x-formantai-event-id': event.event_id,
    },
  })
  if (res.status !== 204) throw new Error(`receiver answered ${res.status}: ${await res.text()}`)
  return event.event_id
}
