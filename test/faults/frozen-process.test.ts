import { afterAll, describe, expect, it } from 'vitest'
import { makeEvent } from '../webhooks/helpers.ts'
import { sendWithRetries } from './helpers/sender.ts'
import { startServe, until, type ServeChild } from '../helpers/serve-child.ts'

/**
 * Promise: a `serve` frozen whole and resumed — a VM paused, a laptop asleep, here SIGSTOP and SIGCONT — goes on
 * where it stood. Its processing thread stood still with it, so its watchdog (silent for 10 s at the shortest) must not
 * read the pause as a stuck recipe and restart the thread, which recorded a run under way as failed.
 */
const SECRET = 'whsec_fault_frozen'

describe('fault: the whole process frozen and resumed', () => {
  let serve: ServeChild | undefined
  afterAll(async () => {
    await serve?.stop()
  })

  it('does not restart its processing thread, and processes what arrives after', async () => {
    // RECIPE_TIMEOUT_SECONDS=1: the watchdog's shortest window, 10 s.
    serve = await startServe({ WEBHOOK_SECRET: SECRET, RECIPE_TIMEOUT_SECONDS: '1' })
    await until(async () => ((await (await fetch(`${serve!.url}/readyz`)).json()) as { processing?: string }).processing === 'running', 'processing to run', 20_000)
    serve.child.kill('SIGSTOP')
    await new Promise((resolve) => setTimeout(resolve, 12_000))
    serve.child.kill('SIGCONT')
    // Two watchdog looks after the resume, and an event through the whole pipeline.
    await new Promise((resolve) => setTimeout(resolve, 2_500))
    const event = makeEvent({ event_type: 'call.completed' })
    const sent = await sendWithRetries({ port: serve.port, secret: SECRET, bodies: [{ eventId: event.event_id, body: JSON.stringify(event) }], lanes: 1, retryMs: 100 })
    expect(sent.acknowledged.size).toBe(1)
    await until(async () => /switchboard_webhook_events_processed_total\{source="webhook"\} [1-9]/.test(await (await fetch(`${serve!.url}/metrics`)).text()), 'the event to be processed', 20_000)
    expect(serve.logs(/stopped answering/)).toEqual([])
    expect(await (await fetch(`${serve.url}/metrics`)).text()).toMatch(/switchboard_processing_thread_restarts_total 0/)
  })
})
