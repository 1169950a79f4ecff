import { createHmac, timingSafeEqual } from 'node:crypto'
import { createServer, type IncomingHttpHeaders } from 'node:http'
import { serve } from 'h3'
import { ALL_EVENTS, createSandbox, type Sandbox, type SandboxOptions } from '../../src/sandbox/index.ts'
import { createVoiceClient, type VoiceClient, type VoiceClientOptions } from '../../src/upstream/client.ts'
import { createManualClock, type ManualClock } from '../../src/utils/clock.ts'
import { createSeededRandom } from '../../src/utils/random.ts'

export const SECRET = 'whsec_contract_secret'

export interface Delivery {
  headers: IncomingHttpHeaders
  raw: Buffer
  /** Checked here with node:crypto, not with the code under test. */
  signatureValid: boolean
}

/** The real sandbox served over HTTP on 127.0.0.1, a webhook receiver, and real clients — one shared manual clock. */
export async function startContract(options: Partial<SandboxOptions> = {}) {
  const clock: ManualClock = createManualClock('2026-03-18T20:53:30Z')
  const deliveries: Delivery[] = []
  const receiver = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const raw = Buffer.concat(chunks)
      const expected = Buffer.from(`sha256=${createHmac('sha256', SECRET).update(raw).digest('hex')}`)
      const got = Buffer.from(String(req.headers['x-formantai-signature'] ?? ''))
      deliveries.push({ headers: req.headers, raw, signatureValid: got.length === expected.length && timingSafeEqual(got, expected) })
      res.statusCode = 204
      res.end()
    })
  })
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
  const address = receiver.address()
  const hookUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/webhooks/formant`

  let baseUrl = ''
  const sandbox: Sandbox = createSandbox({
    clock,
    random: createSeededRandom(11),
    speed: 60,
    publicBaseUrl: () => baseUrl,
    webhookTargets: () => [
      { name: 'contract', url: hookUrl, secret: SECRET, events: ALL_EVENTS, includeTranscript: true, includeRecordingUrl: true, active: true },
    ],
    ...options,
  })
  const server = serve(sandbox.app, { port: 0, hostname: '127.0.0.1', silent: true, gracefulShutdown: false })
  await server.ready()
  const bound = server.node?.server?.address()
  baseUrl = `http://127.0.0.1:${typeof bound === 'object' && bound ? bound.port : 0}`

  // Each client its own seed: auto idempotency keys come from it and must not repeat across clients.
  let seed = 100
  const client = (apiKey = 'sk_test_acme', extra: Partial<VoiceClientOptions> = {}): VoiceClient =>
    createVoiceClient({ apiKey, baseUrl, clock, random: createSeededRandom(seed++), timeoutMs: 5_000, ...extra })

  /** Settles a client promise that may sleep on the clock (retries), advancing time while it waits. */
  async function drive<T>(promise: Promise<T>, stepMs = 1000): Promise<T> {
    let settled = false
    promise.then(
      () => (settled = true),
      () => (settled = true),
    )
    for (let i = 0; i < 2000 && !settled; i++) {
      await new Promise((resolve) => setTimeout(resolve, 2)) // real network I/O, bounded
      if (!settled) await clock.advance(stepMs)
    }
    return promise
  }

  return {
    clock,
    sandbox,
    baseUrl,
    hookUrl,
    deliveries,
    client,
    drive,
    async close() {
      await sandbox.close()
      await server.close(true)
      receiver.closeAllConnections()
      await new Promise<void>((resolve) => receiver.close(() => resolve()))
    },
  }
}
export type Contract = Awaited<ReturnType<typeof startContract>>

export const phone = (value: string) => [{ name: 'customer_phone', value }]
