import { expect, it, vi } from 'vitest'
import { postSignedEvent, useServeInProcess } from '../helpers/serve-in-process.ts'
import { makeEvent } from '../webhooks/helpers.ts'
import { DEST_SECRET } from './helpers.ts'

const serve = useServeInProcess('dest-metrics')

// The service as `serve` runs it: the main thread's registry and the processing thread's, summed by /metrics.
it('/metrics reports a destination\'s backlog as it is under serve, not once per thread', async () => {
  const server = await serve.start({
    ALLOW_PRIVATE_DESTINATIONS: '1',
    // Nothing listens on port 9: every delivery fails and waits for its retry.
    DESTINATIONS: JSON.stringify([{ name: 'crm', url: 'http://127.0.0.1:9/hook', secret: DEST_SECRET, allowHttp: true }]),
  })
  for (let i = 0; i < 5; i++) expect((await postSignedEvent(server, makeEvent())).status).toBe(204)
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
