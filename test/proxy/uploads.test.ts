import { createHash } from 'node:crypto'
import { createServer, request, type IncomingHttpHeaders, type Server } from 'node:http'
import { connect } from 'node:net'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { afterEach, describe, expect, it } from 'vitest'
import { proxyHarness, type ProxyHarness } from './helpers.ts'

const MB = 1024 * 1024

// Live memory, not garbage waiting for a collection: collect before each sample.
setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void
const CHUNK = 64 * 1024

/**
 * A provider stand-in for the upload path only: it hashes what it receives as it arrives (never holding
 * it), so the test can see every byte made it and how far the upload has got at any moment. Everything
 * else goes to the real sandbox.
 */
async function countingUpstream(sandboxUrl: string) {
  const state = { received: 0, hash: '', contentType: '', authorization: '', done: false }
  const server: Server = createServer((req, res) => {
    if (req.method === 'POST' && req.url === '/v1/transcription/jobs') {
      const hash = createHash('sha256')
      state.contentType = req.headers['content-type'] ?? ''
      state.authorization = req.headers.authorization ?? ''
      req.on('data', (c: Buffer) => {
        state.received += c.length
        hash.update(c)
      })
      req.on('end', () => {
        state.hash = hash.digest('hex')
        state.done = true
        res.setHeader('content-type', 'application/json')
        res.end(JSON.stringify({ id: 'job_streamed', engine: 'counting', status: 'pending' }))
      })
      return
    }
    // Anything else: relay to the sandbox.
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', async () => {
      const upstream = await fetch(`${sandboxUrl}${req.url}`, {
        method: req.method,
        headers: Object.fromEntries(Object.entries(req.headers).filter(([k]) => !['host', 'connection', 'content-length'].includes(k)).map(([k, v]) => [k, String(v)])),
        body: chunks.length ? Buffer.concat(chunks) : undefined,
      })
      res.writeHead(upstream.status, Object.fromEntries(upstream.headers))
      res.end(Buffer.from(await upstream.arrayBuffer()))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`
  return { url, state, close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))) }
}

/** Deterministic content for chunk i. */
function chunkAt(i: number): Uint8Array {
  const buf = Buffer.alloc(CHUNK)
  for (let j = 0; j < CHUNK; j += 4) buf.writeUInt32LE((i * 2654435761 + j) >>> 0, j)
  return buf
}

// Uploads never touch the database (they stream through), so one dialect is enough.
describe('proxy uploads', () => {
  const dialect = 'sqlite' as const
  let h: ProxyHarness | undefined
  let upstream: Awaited<ReturnType<typeof countingUpstream>> | undefined
  afterEach(async () => {
    await h?.close()
    await upstream?.close()
    h = undefined
    upstream = undefined
  })

  it('streams a 20 MB multipart upload through with flat memory; the upstream gets every byte', async () => {
    h = await proxyHarness({ dialect, upstreamUrl: async (sandboxUrl) => (upstream = await countingUpstream(sandboxUrl)).url })
    const boundary = 'sbBoundary7MA4YWxkTrZu0gW'
    const head = new TextEncoder().encode(`--${boundary}\r\nContent-Disposition: form-data; name="audio"; filename="big.wav"\r\nContent-Type: audio/wav\r\n\r\n`)
    const tail = new TextEncoder().encode(`\r\n--${boundary}--\r\n`)
    const chunks = (20 * MB) / CHUNK
    const expected = createHash('sha256')
    expected.update(head)
    for (let i = 0; i < chunks; i++) expected.update(chunkAt(i))
    expected.update(tail)
    const total = head.length + 20 * MB + tail.length

    // The client sends the next chunk only once the upstream has received all but 1 MB of what was
    // sent: a proxy that buffered the upload could never finish (bounded buffering, by construction).
    // node:http rather than fetch on the client side: undici keeps a streamed request body's buffers
    // alive until the request ends, which would measure the client rather than the proxy.
    const window = 1 * MB
    gc()
    const before = process.memoryUsage()
    let peak = 0
    let samples = 0
    // Sampled by progress (every MB sent), so the figure does not depend on how fast the machine is.
    const sample = () => {
      gc()
      const m = process.memoryUsage()
      samples++
      peak = Math.max(peak, m.heapUsed + m.arrayBuffers - (before.heapUsed + before.arrayBuffers))
    }
    const target = new URL(`${h.proxyUrl}/v1/transcription/jobs`)
    const res = await new Promise<{ status: number; headers: IncomingHttpHeaders; body: string }>((resolve, reject) => {
      const req = request(
        { host: target.hostname, port: target.port, path: target.pathname, method: 'POST', headers: { authorization: 'Bearer sk_test_acme', 'content-type': `multipart/form-data; boundary=${boundary}` } },
        (response) => {
          let text = ''
          response.setEncoding('utf8')
          response.on('data', (c: string) => (text += c))
          response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body: text }))
        },
      )
      req.on('error', reject)
      void (async () => {
        let sent = 0
        const write = async (part: Uint8Array) => {
          const deadline = Date.now() + 10_000
          while (upstream!.state.received < sent - window) {
            if (Date.now() > deadline) throw new Error(`upload stalled: sent ${sent}, upstream has ${upstream!.state.received}`)
            await new Promise((r) => setTimeout(r, 1))
          }
          if (Math.floor((sent + part.length) / MB) > Math.floor(sent / MB)) sample()
          sent += part.length
          if (!req.write(part)) await new Promise((r) => req.once('drain', r))
        }
        await write(head)
        for (let i = 0; i < chunks; i++) await write(chunkAt(i))
        await write(tail)
        req.end()
      })().catch(reject)
    })
    expect(res.status).toBe(200)
    expect(res.headers['x-cache']).toBe('BYPASS')
    expect(JSON.parse(res.body)).toEqual({ id: 'job_streamed', engine: 'counting', status: 'pending' })
    expect(upstream!.state).toMatchObject({ received: total, hash: expected.digest('hex'), done: true, authorization: 'Bearer sk_test_acme' })
    expect(upstream!.state.contentType).toBe(`multipart/form-data; boundary=${boundary}`)
    // Client, proxy and upstream share this process; all of them together stay far below 20 MB of growth.
    expect(samples).toBeGreaterThanOrEqual(20)
    console.log(`upload: peak live growth ${(peak / MB).toFixed(1)} MB over ${samples} samples`)
    expect(peak).toBeLessThan(8 * MB)
  }, 60_000)

  it('refuses an upload over PROXY_MAX_UPLOAD_BYTES with 413, before or while it streams', async () => {
    h = await proxyHarness({ dialect, env: { PROXY_MAX_UPLOAD_BYTES: String(MB) }, upstreamUrl: async (sandboxUrl) => (upstream = await countingUpstream(sandboxUrl)).url })
    const form = new FormData()
    form.set('audio', new Blob([new Uint8Array(2 * MB)], { type: 'audio/wav' }), 'big.wav')
    const declared = await h.request('/v1/transcription/jobs', { method: 'POST', body: form })
    expect(declared.status).toBe(413)
    expect(declared.headers.get('x-cache')).toBe('BYPASS')
    expect(await declared.json()).toEqual({ error: { message: `request body is larger than ${MB} bytes (PROXY_MAX_UPLOAD_BYTES)`, type: 'invalid_request' } })
    expect(upstream!.state.received).toBe(0)

    // No Content-Length (chunked): cut off once the count passes the limit.
    let n = 0
    const endless = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (n++ >= 40) return controller.close()
        controller.enqueue(new Uint8Array(CHUNK))
      },
    })
    const chunked = await fetch(`${h.proxyUrl}/v1/transcription/jobs`, {
      method: 'POST',
      headers: { authorization: 'Bearer sk_test_acme', 'content-type': 'multipart/form-data; boundary=x' },
      body: endless,
      duplex: 'half',
    } as RequestInit).catch((error: Error) => error)
    if (chunked instanceof Response) {
      expect(chunked.status).toBe(413)
    }
    expect(upstream!.state.received).toBeLessThanOrEqual(MB)
    expect(upstream!.state.done).toBe(false)
  })

  it('a 413 for a declared Content-Length over the limit says Connection: close and closes, so the client stops sending', async () => {
    h = await proxyHarness({ dialect, env: { PROXY_MAX_UPLOAD_BYTES: String(MB) } })
    const port = new URL(h.proxyUrl).port
    /** Sends the head of a request declaring a body of `length` bytes, and the first bytes of it; never the rest. */
    const declare = (path: string, type: string, length: number) =>
      new Promise<{ answer: string; closed: boolean }>((resolve, reject) => {
        let answer = ''
        const socket = connect(Number(port), '127.0.0.1', () => {
          socket.write(`POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sk_test_acme\r\nContent-Type: ${type}\r\nContent-Length: ${length}\r\n\r\n`)
          socket.write(Buffer.alloc(16 * 1024, 0x20))
        })
        // A server that keeps the connection waits for the rest of the body: judged once the answer is whole.
        const undecided = setTimeout(() => {
          socket.destroy()
          resolve({ answer, closed: false })
        }, 3_000)
        socket.on('data', (chunk: Buffer) => (answer += chunk.toString('latin1')))
        socket.on('end', () => {
          clearTimeout(undecided)
          socket.destroy()
          resolve({ answer, closed: true })
        })
        socket.on('error', (error) => {
          clearTimeout(undecided)
          // A reset once the answer is in is the server closing too.
          if (answer.includes('\r\n\r\n')) resolve({ answer, closed: true })
          else reject(error)
        })
      })
    for (const [path, type, length] of [
      ['/v1/batch-call', 'multipart/form-data; boundary=x', 10_000_000_000],
      ['/v1/transcription/jobs', 'multipart/form-data; boundary=x', 2 * MB],
      ['/v1/call', 'application/json', 10_000_000_000],
    ] as const) {
      const { answer, closed } = await declare(path, type, length)
      expect(answer.split('\r\n')[0], path).toBe('HTTP/1.1 413 Payload Too Large')
      expect(answer.toLowerCase(), path).toContain('\r\nconnection: close\r\n')
      expect(answer.toLowerCase()).toContain('\r\nx-cache: bypass\r\n')
      expect(closed, `${path}: the server closed the connection`).toBe(true)
    }
  })
})
