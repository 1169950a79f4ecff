import { afterEach, expect, it } from 'vitest'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { cliEnv, runCli } from '../webhooks/helpers.ts'
import { destination, startSink, type Sink } from './helpers.ts'

let rt: TestRuntime | undefined
let sink: Sink | undefined
afterEach(async () => {
  await sink?.close()
  await rt?.close()
  rt = sink = undefined
})

// A sink that echoes its request (httpbin, a debugging endpoint, an error page quoting the headers) had the
// destination's credentials kept in the delivery's attempt log, shown on the Destinations page and by the CLI.
it("a destination's answer is kept without the credentials switchboard sent it", async () => {
  sink = await startSink((_n, req, res) => res.writeHead(401, { 'content-type': 'text/plain' }).end(`denied: ${req.headers.authorization} / ${req.headers['x-api-key']} / token ${String(req.headers.authorization).split(' ')[1]}`))
  rt = await createTestRuntime()
  const bearer = destination(sink, { headers: { authorization: 'Bearer s3cr3t-token-4711', 'x-api-key': 'key-0123456789', 'x-team': 'ops' } })
  const tested = await runCli(['destinations', 'test', 'crm'], cliEnv(rt, { DESTINATIONS: JSON.stringify([bearer]), ALLOW_PRIVATE_DESTINATIONS: 'true' }))
  expect(tested.code).toBe(1)
  expect(tested.out).toContain('response: denied: [redacted] / [redacted] / token [redacted]')
  expect(tested.out).not.toMatch(/s3cr3t|0123456789/)

  // Basic credentials from the URL's user-info: the header, the pair and the password, as a sink may echo any.
  const url = new URL(sink.url)
  url.username = 'crm-user'
  url.password = 'pa55word-xyz'
  await sink.close()
  sink = await startSink((_n, req, res) => {
    const basic = String(req.headers.authorization).split(' ')[1]!
    const pair = Buffer.from(basic, 'base64').toString()
    res.writeHead(500, { 'content-type': 'text/plain' }).end(`got ${req.headers.authorization}; user:pass ${pair}; password ${pair.split(':')[1]}`)
  })
  url.port = new URL(sink.url).port
  const basic = await runCli(['destinations', 'test', 'crm'], cliEnv(rt, { DESTINATIONS: JSON.stringify([destination(url.href)]), ALLOW_PRIVATE_DESTINATIONS: 'true' }))
  expect(basic.out).toContain('response: got [redacted]; user:pass [redacted]; password [redacted]')
  expect(basic.out).not.toContain('pa55word-xyz')

  // A short password is a credential all the same: it was kept as echoed (values under 8 characters were left).
  url.username = 'bot'
  url.password = 'pw123'
  const short = await runCli(['destinations', 'test', 'crm'], cliEnv(rt, { DESTINATIONS: JSON.stringify([destination(url.href)]), ALLOW_PRIVATE_DESTINATIONS: 'true' }))
  expect(short.out).toContain('response: got [redacted]; user:pass [redacted]; password [redacted]')
  expect(short.out).not.toContain('pw123')
})

// The URL is shown with its query values and every path segment but the first hidden; a sink quoting its request URL
// (an error page's "no route for …") showed them all the same.
it("a destination's answer is kept without its URL's token (query values, path segments past the first)", async () => {
  sink = await startSink((_n, req, res) => res.writeHead(404, { 'content-type': 'text/plain' }).end(`no route for ${req.url}`), '/services/T0AB12CD/B0XYZ987/hookS3cr3tToken')
  rt = await createTestRuntime()
  const url = `${sink.url}?token=QUERYTOKEN_s3cret&team=ops`
  const tested = await runCli(['destinations', 'test', 'crm'], cliEnv(rt, { DESTINATIONS: JSON.stringify([destination(url)]), ALLOW_PRIVATE_DESTINATIONS: 'true' }))
  expect(tested.out).toContain('response: no route for /services/[redacted]/[redacted]/[redacted]?token=[redacted]&team=ops')
  expect(tested.out).not.toMatch(/QUERYTOKEN|hookS3cr3t|T0AB12CD/)
})
