import { createServer, type IncomingHttpHeaders, type Server } from 'node:http'
import { createSandbox, type Sandbox, type SandboxOptions } from '../../src/sandbox/index.ts'
import { createManualClock, type ManualClock } from '../../src/utils/clock.ts'
import { createSeededRandom } from '../../src/utils/random.ts'

export const ACME = 'sk_test_acme'
export const GLOBEX = 'sk_test_globex'

export interface Harness {
  sb: Sandbox
  clock: ManualClock
  request(path: string, init?: RequestInit & { key?: string | null }): Promise<Response>
  call(body: unknown, key?: string): Promise<Response>
  json<T = any>(res: Response): Promise<T>
}

/** A sandbox on a manual clock and a seeded random, driven through `app.fetch`. */
export function harness(options: SandboxOptions = {}): Harness {
  const clock = createManualClock('2026-03-18T20:53:30Z')
  const sb = createSandbox({ clock, random: createSeededRandom(7), speed: 60, ...options })
  const request = (path: string, init: RequestInit & { key?: string | null } = {}) => {
    const headers = new Headers(init.headers)
    const key = init.key === undefined ? ACME : init.key
    if (key !== null) headers.set('authorization', `Bearer ${key}`)
    return sb.fetch(new Request(`http://sandbox.test${path}`, { ...init, headers }))
  }
  return {
    sb,
    clock,
    request,
    call: (body, key = ACME) =>
      request('/v1/call', { method: 'POST', key, headers: { 'content-type': 'application/json' }, body: typeof body === 'string' ? body : JSON.stringify(body) }),
    json: async (res) => (await res.json()) as any,
  }
}

export const phoneCall = (phone: string, extra: Record<string, unknown> = {}, agentId = 101) => ({
  agent_id: agentId,
  parameters: [{ name: 'customer_phone', value: phone }],
  ...extra,
})

export interface Received {
  headers: IncomingHttpHeaders
  body: string
}

/** A real webhook receiver on 127.0.0.1 answering with whatever `answer` says. */
export async function startReceiver(answer: (r: Received, n: number) => number | Promise<number> = () => 204) {
  const received: Received[] = []
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', async () => {
      const r = { headers: req.headers, body: Buffer.concat(chunks).toString('utf8') }
      received.push(r)
      const status = await answer(r, received.length)
      if (status === 0) return // hang: never answer
      res.statusCode = status
      res.end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  const port = typeof address === 'object' && address ? address.port : 0
  return {
    url: `http://127.0.0.1:${port}/hook`,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
