import { afterAll, describe, expect, it } from 'vitest'
import { openTestStore, type TestStore } from '../helpers/db.ts'
import { makeEvent } from '../webhooks/helpers.ts'
import { printFigures } from './helpers/figures.ts'
import { sendWithRetries, type Delivery } from './helpers/sender.ts'
import { startServe, waitForLog, type ServeChild } from '../helpers/serve-child.ts'
import { startTcpGate, type TcpGate } from './helpers/tcp-gate.ts'

/**
 * Promise: Postgres restarting or unreachable during a webhook burst never kills the process, never gets
 * a 2xx for an event that was not committed, never makes a delivery wait past the provider's 10 s, and
 * the service recovers by itself. The issue asks for 30 s; the suite cuts for CUT_SECONDS (8 s) to stay
 * inside its time budget — nothing in the code depends on the length (set FAULT_CUT_SECONDS=30 to check).
 */
const CUT_SECONDS = Number(process.env.FAULT_CUT_SECONDS ?? 8)
const EVENTS = 1_200
const SECRET = 'whsec_fault_pg'
const pgUrl = process.env.DATABASE_URL_TEST

describe.skipIf(!pgUrl)('fault: Postgres unreachable during a webhook burst', () => {
  let store: TestStore | undefined
  let gate: TcpGate | undefined
  let serve: ServeChild | undefined
  afterAll(async () => {
    await serve?.stop()
    await gate?.close()
    await store?.close()
  })

  /** A fresh database and one `serve` whose every connection goes through a gate the test can cut (the last case's stopped). */
  async function restartThroughGate(): Promise<{ serve: ServeChild; gate: TcpGate; store: TestStore }> {
    await serve?.stop()
    await gate?.close()
    await store?.close()
    store = await openTestStore('postgres')
    const direct = new URL(pgUrl!)
    gate = await startTcpGate(Number(direct.port || 5432), direct.hostname)
    const gated = new URL(store.url)
    gated.host = `127.0.0.1:${gate.port}`
    serve = await startServe({ DATABASE_URL: gated.toString(), WEBHOOK_SECRET: SECRET, VOICE_API_KEY: 'sk_fault_test', VOICE_API_BASE_URL: 'http://127.0.0.1:9' })
    return { serve, gate, store }
  }

  it(`survives a ${CUT_SECONDS} s cut: 503 while down, every event stored once, processing resumes`, async () => {
    store = await openTestStore('postgres')
    const direct = new URL(pgUrl!)
    gate = await startTcpGate(Number(direct.port || 5432), direct.hostname)
    const gated = new URL(store.url)
    gated.host = `127.0.0.1:${gate.port}`
    // One `serve` as shipped (`--role all`: the receiver here, processing in its worker thread), all of
    // its connections through the gate.
    const env = {
      DATABASE_URL: gated.toString(),
      WEBHOOK_SECRET: SECRET,
      // A workspace key pointing nowhere: no sandbox traffic in this case.
      VOICE_API_KEY: 'sk_fault_test',
      VOICE_API_BASE_URL: 'http://127.0.0.1:9',
    }
    serve = await startServe(env)
    await waitForLog(serve, /switchboard ready/)
    const port = serve.port

    const bodies = Array.from({ length: EVENTS }, (_, i) => {
      const event = makeEvent({ event_id: `evt_pgcut_${i}` })
      return { eventId: event.event_id, body: JSON.stringify(event) }
    })
    let ackCount = 0
    const acked = () => ackCount
    let cutAt = 0
    let restoredAt = 0
    let readyDownMs: number | null = null
    const cutDone = (async () => {
      // Wait for a third of the burst to be acknowledged, then cut.
      while (acked() < EVENTS / 3 && serve!.alive()) await new Promise((r) => setTimeout(r, 20))
      cutAt = Date.now()
      await gate!.cut()
      // /readyz turns unavailable while the database is gone.
      for (;;) {
        const status = await fetch(`${serve!.url}/readyz`).then((r) => r.status, () => 0)
        if (status === 503) {
          readyDownMs = Date.now() - cutAt
          break
        }
        if (Date.now() - cutAt > CUT_SECONDS * 1000) break
        await new Promise((r) => setTimeout(r, 100))
      }
      await new Promise((r) => setTimeout(r, Math.max(0, CUT_SECONDS * 1000 - (Date.now() - cutAt))))
      await gate!.restore()
      restoredAt = Date.now()
    })()
    const result = await sendWithRetries({
      port,
      secret: SECRET,
      bodies,
      lanes: 16,
      retryMs: 250,
      giveUpMs: 90_000,
      abort: () => !serve!.alive(),
      onAnswer: (_d: Delivery, n: number) => {
        ackCount = n
      },
    })
    await cutDone

    expect(serve.alive()).toBe(true)
    const during = result.deliveries.filter((d) => d.at > cutAt && d.at < restoredAt)
    const refused = during.filter((d) => d.status === 503).length
    const firstOkAfter = result.deliveries.filter((d) => d.at >= restoredAt && d.status === 204).sort((a, b) => a.at - b.at)[0]
    const recoverySeconds = firstOkAfter ? (firstOkAfter.at - restoredAt) / 1000 : null

    // Every event processed, through the same process (no restart).
    const deadline = Date.now() + 60_000
    let processed = 0
    for (;;) {
      const row = await store.db
        .selectFrom('webhook_events')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('status', '=', 'processed')
        .executeTakeFirstOrThrow()
      processed = Number(row.n)
      if (processed >= EVENTS || Date.now() > deadline) break
      await new Promise((r) => setTimeout(r, 250))
    }
    const rows = await store.db.selectFrom('webhook_events').select(['event_id', 'duplicates']).execute()
    const storedIds = new Set(rows.map((r) => r.event_id))
    const lost = [...result.acknowledged].filter((id) => !storedIds.has(id)).length + bodies.filter((b) => !result.acknowledged.has(b.eventId)).length
    const duplicates = rows.reduce((n, r) => n + Number(r.duplicates), 0)
    printFigures(`postgres cut ${CUT_SECONDS} s`, {
      sent: result.sent,
      acknowledged: result.acknowledged.size,
      stored: rows.length,
      processed,
      duplicates,
      lost,
      recoverySeconds,
      extra: {
        'answers during the cut': during.length,
        '503 during the cut': refused,
        'slowest answer': `${result.slowestMs} ms`,
        'readyz 503 after': readyDownMs === null ? 'never' : `${readyDownMs} ms`,
        'process restarts': 0,
      },
    })

    expect(serve.alive()).toBe(true)
    expect(lost).toBe(0)
    expect(rows.length).toBe(EVENTS)
    expect(storedIds.size).toBe(EVENTS)
    expect(processed).toBe(EVENTS)
    expect(refused).toBeGreaterThan(0)
    // No 2xx while the gate was shut: nothing could have been committed then.
    expect(during.filter((d) => d.status >= 200 && d.status < 300 && d.at - d.ms > cutAt + 50).length).toBe(0)
    expect(result.slowestMs).toBeLessThan(10_000)
    expect(readyDownMs).not.toBeNull()
    expect(readyDownMs!).toBeLessThan(5_000)
    expect(recoverySeconds).not.toBeNull()
    expect(recoverySeconds!).toBeLessThan(10)
    expect(serve.logs(/database connection lost/).length).toBeGreaterThan(0)
  }, 150_000)

  it('processing starts once the database is back when it drops while the processing thread starts', async () => {
    const { serve, gate, store } = await restartThroughGate()
    // The receiver answers /readyz before its processing thread has loaded (about a second): cut now.
    const startingWhenCut = serve.logs(/switchboard ready/).length === 0
    await gate.cut()
    await new Promise((r) => setTimeout(r, 3_000))
    await gate.restore()
    await waitForLog(serve, /switchboard ready/)
    const bodies = Array.from({ length: 50 }, (_, i) => {
      const event = makeEvent({ event_id: `evt_pgstart_${i}` })
      return { eventId: event.event_id, body: JSON.stringify(event) }
    })
    const result = await sendWithRetries({ port: serve.port, secret: SECRET, bodies, lanes: 4, retryMs: 250, giveUpMs: 30_000, abort: () => !serve!.alive() })
    const deadline = Date.now() + 30_000
    let processed = 0
    while (processed < bodies.length && Date.now() < deadline) {
      const row = await store.db.selectFrom('webhook_events').select((eb) => eb.fn.countAll<number>().as('n')).where('status', '=', 'processed').executeTakeFirstOrThrow()
      processed = Number(row.n)
      if (processed < bodies.length) await new Promise((r) => setTimeout(r, 250))
    }
    const stored = Number((await store.db.selectFrom('webhook_events').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n)
    printFigures('postgres cut while processing starts', {
      sent: result.sent,
      acknowledged: result.acknowledged.size,
      stored,
      processed,
      duplicates: 0,
      lost: bodies.length - result.acknowledged.size,
      recoverySeconds: null,
      extra: { 'cut before processing was ready': String(startingWhenCut), 'start retries logged': serve.logs(/processing could not start/).length },
    })
    expect(serve.alive()).toBe(true)
    expect(result.acknowledged.size).toBe(bodies.length)
    expect(stored).toBe(bodies.length)
    expect(processed).toBe(bodies.length)
  }, 90_000)

  it('is ready again once the database answers, without waiting for a delivery to tell', async () => {
    const { serve, gate } = await restartThroughGate()
    await waitForLog(serve, /switchboard ready/)
    await gate.cut()
    // One delivery meets the outage (503): the receiver remembers the failed commit.
    const event = makeEvent({ event_id: 'evt_pgback_1' })
    const refused = await sendWithRetries({ port: serve.port, secret: SECRET, bodies: [{ eventId: event.event_id, body: JSON.stringify(event) }], lanes: 1, retryMs: 250, giveUpMs: 1, abort: () => !serve!.alive() })
    expect(refused.deliveries.map((d) => d.status)).toContain(503)
    await gate.restore()
    const restoredAt = Date.now()
    // Then nothing is sent: the provider backs off, and a load balancer that follows /readyz sends it nowhere while it
    // says unavailable. It said so for a minute after the database was back ("deliveries are answered 503 until one
    // is") while a delivery would have been stored (an operator probe).
    let readyAfterMs: number | null = null
    let last = ''
    while (Date.now() - restoredAt < 20_000) {
      const answer = await fetch(`${serve.url}/readyz`).then(async (r) => ({ status: r.status, body: await r.text() }), () => ({ status: 0, body: '' }))
      last = answer.body
      if (answer.status === 200) {
        readyAfterMs = Date.now() - restoredAt
        break
      }
      await new Promise((r) => setTimeout(r, 250))
    }
    printFigures('postgres back, no delivery since', { sent: 1, acknowledged: 0, stored: 0, processed: 0, duplicates: 0, lost: 0, recoverySeconds: readyAfterMs === null ? null : readyAfterMs / 1000, extra: { 'last /readyz': last.slice(0, 160) } })
    expect(readyAfterMs, last).not.toBeNull()
    expect(readyAfterMs!).toBeLessThan(10_000)
  }, 90_000)
})
