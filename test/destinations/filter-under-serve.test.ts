import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { expect, it, vi } from 'vitest'
import { restoreFilters, threadConfig } from '../../src/config/thread-config.ts'
import { loadConfig } from '../../src/config/load.ts'
import { postSignedEvent, useServeInProcess } from '../helpers/serve-in-process.ts'
import { makeEvent } from '../webhooks/helpers.ts'
import { DEST_SECRET } from './helpers.ts'

const serve = useServeInProcess('dest-filter')

// A filter is a function, written in switchboard.config.ts; under `serve` forwarding runs in the processing thread,
// which gets its config by structured clone — where a function cannot go. It used to stop `serve` at start-up.
it('a destination\'s filter from the config file works under serve, in the processing thread', async () => {
  const file = join(serve.dataDir, 'switchboard.config.ts')
  writeFileSync(
    file,
    `export default {
  DESTINATIONS: [{ name: 'crm', url: 'http://127.0.0.1:9/hook', secret: '${DEST_SECRET}', allowHttp: true, filter: (event: { agentId: number | null }) => event.agentId === 101 }],
}
`,
  )
  const server = await serve.start({ ALLOW_PRIVATE_DESTINATIONS: '1', SWITCHBOARD_CONFIG: file })
  const kept = makeEvent({ call: { agent_id: 101 } })
  const filteredOut = makeEvent({ call: { agent_id: 202 } })
  for (const event of [kept, filteredOut]) expect((await postSignedEvent(server, event)).status).toBe(204)
  const db = server.rt.store.db
  await vi.waitFor(async () => {
    const statuses = await db.selectFrom('webhook_events').select('status').execute()
    expect(statuses.map((s) => s.status)).toEqual(['processed', 'processed'])
  }, { timeout: 20_000, interval: 50 })
  // Nothing listens on port 9, so the delivery waits for its retry: it exists for the event the filter kept only.
  const deliveries = await db.selectFrom('destination_deliveries').select(['event_id', 'destination']).execute()
  expect(deliveries).toEqual([{ event_id: kept.event_id, destination: 'crm' }])
}, 60_000)

it('a filter that cannot be loaded again in the thread stops it with the destination named, rather than forwarding everything', async () => {
  const config = loadConfig({ env: { DATA_DIR: '/tmp/unused' }, file: { DESTINATIONS: [{ name: 'crm', url: 'https://crm.example.com/hook', secret: DEST_SECRET, filter: () => true }] } })
  const handed = threadConfig(config)
  expect(handed.filtered).toEqual(['crm'])
  expect(structuredClone(handed).config.destinations.list[0]!.filter).toBeUndefined()
  await expect(restoreFilters(structuredClone(handed))).rejects.toThrow('the filter of destination crm cannot reach the processing thread: it is not in a config file (this config was built in code)')
})
