import { connect } from 'node:net'
import { H3 } from 'h3'
import { afterEach, expect, it } from 'vitest'
import { serveApp, type ServedApp } from '../../src/utils/serve-app.ts'

/**
 * What Node's HTTP parser refuses before any handler runs — a raw byte or space in the URL, headers past 16 KB — was a
 * bare `400 Bad Request` / `431` with no body: the one error not in the `{"error":{"message","type"}}` shape.
 */
let served: ServedApp | undefined
afterEach(async () => {
  await served?.shutdown(0)
  served = undefined
})

async function raw(port: number, request: Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.end(request))
    const chunks: Buffer[] = []
    socket.on('data', (c: Buffer) => chunks.push(c))
    socket.on('error', reject)
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')))
  })
}

async function start(): Promise<number> {
  const app = new H3()
  app.get('/v1/conversations', () => ({ data: [] }))
  app.post('/v1/echo', async (event) => ({ got: await event.req.text() }))
  served = serveApp(app, { port: 0, hostname: '127.0.0.1' })
  await served.ready()
  return Number(new URL(served.url!).port)
}

it('a request line Node cannot parse is a 400 with the error body, the connection closed', async () => {
  const port = await start()
  const answer = await raw(port, Buffer.concat([Buffer.from('GET /v1/conversations/'), Buffer.from([0xc3, 0xbc]), Buffer.from(' x HTTP/1.1\r\nHost: a\r\n\r\n')]))
  const [head, body] = answer.split('\r\n\r\n')
  expect(head).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/)
  expect(head).toMatch(/\r\ncontent-type: application\/json\r\n/)
  expect(head).toMatch(/\r\nconnection: close/)
  expect(JSON.parse(body!)).toEqual({ error: { type: 'invalid_request', message: 'the request is not valid HTTP/1.1 (a raw space or non-ASCII byte in the URL? percent-encode it)' } })
})

it('a header with a byte HTTP does not allow is said to be the header, not the URL, and not echoed (it may be the key)', async () => {
  const port = await start()
  for (const bad of [0x7f, 0x01]) {
    const answer = await raw(port, Buffer.concat([Buffer.from('GET /v1/conversations HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer sk_live_secret'), Buffer.from([bad]), Buffer.from('\r\n\r\n')]))
    const [head, body] = answer.split('\r\n\r\n')
    expect(head).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/)
    const { message } = (JSON.parse(body!) as { error: { message: string } }).error
    expect(message).toMatch(/^a header of the request has a character HTTP does not allow/)
    expect(answer).not.toContain('sk_live_secret')
  }
})

it('a body whose length cannot be read is said so', async () => {
  const port = await start()
  for (const framing of ['Content-Length: abc', 'Transfer-Encoding: chunked\r\nContent-Length: 3']) {
    const answer = await raw(port, Buffer.from(`POST /v1/conversations HTTP/1.1\r\nHost: a\r\n${framing}\r\n\r\nabc`))
    const [head, body] = answer.split('\r\n\r\n')
    expect(head, framing).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/)
    expect((JSON.parse(body!) as { error: { message: string } }).error.message, framing).toMatch(/^the request's body is not framed as HTTP\/1\.1 says/)
  }
})

it('a body cut short by the client closing its side is said so', async () => {
  const port = await start()
  const answer = await raw(port, Buffer.from('POST /v1/echo HTTP/1.1\r\nHost: a\r\nContent-Length: 60\r\n\r\nabc'))
  const [head, body] = answer.split('\r\n\r\n')
  expect(head).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/)
  expect((JSON.parse(body!) as { error: { message: string } }).error.message).toMatch(/^the request ended before its body did/)
})

it('headers past 16 KB are a 431 with the error body', async () => {
  const port = await start()
  const answer = await raw(port, Buffer.from(`GET /v1/conversations?x=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: a\r\n\r\n`))
  const [head, body] = answer.split('\r\n\r\n')
  expect(head).toMatch(/^HTTP\/1\.1 431 Request Header Fields Too Large\r\n/)
  expect((JSON.parse(body!) as { error: { message: string } }).error.message).toMatch(/^the request line and headers are larger than 16 KB/)
})

it('a well-formed request is untouched', async () => {
  const port = await start()
  const answer = await raw(port, Buffer.from('GET /v1/conversations HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n'))
  expect(answer).toMatch(/^HTTP\/1\.1 200 OK\r\n/)
  expect(answer).toContain('{"data":[]}')
})
