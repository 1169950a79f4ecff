import { renameSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { startServe, type ServeChild } from '../helpers/serve-child.ts'
import { signedHeaders } from '../faults/helpers/sender.ts'
import { makeEvent, SECRET } from './helpers.ts'

/**
 * The SQLite file removed or replaced under a running `serve` (an operator's `rm` to "reset" it, a restore copied over
 * it): the connections go on writing into the file they hold open, which no path names any more. Found by an
 * operations probe: 20 webhooks answered 204 after the `rm`, `/readyz` ready, and all of them gone at the next start.
 */
describe('the database file taken away under a running serve', () => {
  let serve: ServeChild | undefined
  afterEach(async () => {
    await serve?.stop()
    serve = undefined
  })

  const post = async (url: string) => {
    const body = JSON.stringify(makeEvent())
    return (await fetch(`${url}/webhooks/formant`, { method: 'POST', headers: { 'content-type': 'application/json', ...signedHeaders(body, SECRET) }, body })).status
  }

  it.each([
    ['removed', (db: string) => {
      for (const suffix of ['', '-wal', '-shm']) rmSync(`${db}${suffix}`, { force: true })
    }],
    ['replaced by another file', (db: string) => {
      // A restore's copy written beside it and renamed over it, as `mv` and most tools do.
      writeFileSync(`${db}.restored`, '')
      renameSync(`${db}.restored`, db)
    }],
  ])('%s: webhooks get 503 instead of a 204 nothing keeps, and /readyz says why', async (how, takeAway) => {
    serve = await startServe({ WEBHOOK_SECRET: SECRET })
    expect(await post(serve.url)).toBe(204)
    takeAway(join(serve.dataDir, 'switchboard.db'))
    expect(await post(serve.url)).toBe(503)
    const ready = await fetch(`${serve.url}/readyz`)
    expect(ready.status).toBe(503)
    const body = (await ready.json()) as { status: string; error?: string }
    expect(body.status).toBe('unavailable')
    expect(body.error).toMatch(new RegExp(`database file .*switchboard\\.db was ${how} while the service ran: restart the service`))
  })
})
