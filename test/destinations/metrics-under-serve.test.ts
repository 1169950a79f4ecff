import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, expect, it, vi } from 'vitest'
import { startServer, type RunningServer } from '../../src/server.ts'
import { signFormant } from '../../src/webhooks/verify.ts'
import { FIXTURE_RECIPES_DIR } from '../helpers/recipes.ts'
import { makeEvent } from '../webhooks/helpers.ts'
import { DEST_SECRET } from './helpers.ts'

const SECRET = 'whsec_metrics_under_serve'

let server: RunningServer | undefined
let dataDir: string | undefined
afterEach(async () => {
  await server?.close()
  if (dataDir) rmSync(dataDir, { recursive: true, force: true })
  server = dataDir = undefined
})

// The service as `serve` runs it: the main thread's registry and the processing thread's, summed by /metrics.
it('/metrics reports a destination\'s backlog as it is under serve, not once per thread', async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'sb-dest-metrics-'))
  server = await startServer({
    env: {
      PORT: '0', DATA_DIR: dataDir, RECIPES_DIR: FIXTURE_RECIPES_DIR, WEBHOOK_SECRET: SECRET, LOG_LEVEL: 'silent', RECONCILE_INTERVAL_SECONDS: '0',
      ALLOW_PRIVATE_DESTINATIONS: '1',
      // Nothing listens on port 9: every delivery fails and waits for its retry.
      DESTINATIONS: JSON.stringify([{ name: 'crm', url: 'http://127.0.0.1:9/hook', secret: DEST_SECRET, allowHttp: true }]),
    },
    processing: 'thread',
  })
  for (let i = 0; i < 5; i++) {
    const body = JSON.stringify(makeEvent())
    const res = await fetch(`${server.url}/webhooks/formant`, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json', 'x-formantai-signature': signFormant(body, SECRET), 'x-formantai-timestamp': String(Math.floor(Date.now() / 1000)) },
    })
    expect(res.status).toBe(204)
  }
  const db = server.rt.store.db
  const pending = async () => Number((await db.selectFrom('destination_deliveries').select((eb) => eb.fn.countAll().as('n')).where('status', '=', 'pending').executeTakeFirstOrThrow()).n)
  await vi.waitFor(async () => expect(await pending()).toBe(5), { timeout: 20_000, interval: 50 })
  const oldest = Number((await db.selectFrom('destination_deliveries').select((eb) => eb.fn.min('created_at').as('t')).executeTakeFirstOrThrow()).t)
  const metrics = await (await fetch(`${server.url}/metrics`)).text()
  const value = (name: string) => Number(new RegExp(`^${name}\\{destination="crm"\\} (\\S+)$`, 'm').exec(metrics)?.[1])
  expect(value('switchboard_destination_queue_depth')).toBe(5)
  const age = value('switchboard_destination_oldest_undelivered_seconds')
  expect(age).toBeGreaterThan(0)
  expect(age).toBeLessThanOrEqual((Date.now() - oldest) / 1000 + 0.5)
}, 60_000)
