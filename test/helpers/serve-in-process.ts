import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach } from 'vitest'
import { startServer, type RunningServer } from '../../src/server.ts'
import { signFormant } from '../../src/webhooks/verify.ts'
import { FIXTURE_RECIPES_DIR } from './recipes.ts'

/** What `useServeInProcess` gives a test file. */
export interface ServeInProcess {
  /** Starts `serve` as it runs (processing in its own thread) on a fresh DATA_DIR; `env` adds to the quiet defaults. */
  start(env?: Record<string, string>): Promise<RunningServer>
  /** The running server (after `start`). */
  readonly server: RunningServer
  /** Its DATA_DIR (made before `start`, e.g. to hold a config file). */
  readonly dataDir: string
}

/**
 * The service as `serve` runs it — the receiver on this thread, processing in its thread — inside the test process
 * (so a test can read its database and its threads), on a temporary DATA_DIR. Each test's server is closed and its
 * directory removed after it. Defaults: any port, no recipes, logging silent, reconciliation off.
 */
export function useServeInProcess(prefix: string): ServeInProcess {
  let server: RunningServer | undefined
  let dataDir: string | undefined
  afterEach(async () => {
    await server?.close()
    if (dataDir) rmSync(dataDir, { recursive: true, force: true })
    server = dataDir = undefined
  })
  const dir = () => (dataDir ??= mkdtempSync(join(tmpdir(), `sb-${prefix}-`)))
  return {
    async start(env = {}) {
      server = await startServer({
        env: { PORT: '0', DATA_DIR: dir(), RECIPES_DIR: FIXTURE_RECIPES_DIR, WEBHOOK_SECRET: 'whsec_serve_in_process', LOG_LEVEL: 'silent', RECONCILE_INTERVAL_SECONDS: '0', ...env },
        processing: 'thread',
      })
      return server
    },
    get server() {
      if (!server) throw new Error('start() the server first')
      return server
    },
    get dataDir() {
      return dir()
    },
  }
}

/** Posts one event to `/webhooks/formant`, signed as the provider signs it; resolves with the answer. */
export function postSignedEvent(server: RunningServer, event: unknown, secret = 'whsec_serve_in_process'): Promise<Response> {
  const body = JSON.stringify(event)
  return fetch(`${server.url}/webhooks/formant`, {
    method: 'POST',
    body,
    headers: { 'content-type': 'application/json', 'x-formantai-signature': signFormant(body, secret), 'x-formantai-timestamp': String(Math.floor(Date.now() / 1000)) },
  })
}
