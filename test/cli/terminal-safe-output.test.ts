import { afterEach, expect, it } from 'vitest'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { cliEnv, createHarness, makeEvent, runCli, type Harness } from '../webhooks/helpers.ts'
import { destination, startSink, type Sink } from '../destinations/helpers.ts'

/**
 * What came from outside — a destination's answer, a webhook's fields — reaches the operator's terminal as text that
 * cannot steer it: a sink answering with escape sequences could retitle the terminal, rewrite the very line that says
 * "failed" or (OSC 52) write the clipboard. Control characters are shown as \xNN.
 */
const ESCAPES = '\u001b]0;pwned\u0007\u001b[2K\r\u001b[1Acrm: 200 OK\u001b]52;c;Y3VybA==\u0007\u009b2J'
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/

let rt: TestRuntime | undefined
let h: Harness | undefined
let sink: Sink | undefined
afterEach(async () => {
  await sink?.close()
  await rt?.close()
  await h?.close()
  rt = sink = h = undefined
})

it('destinations test shows a sink\'s answer with its control characters escaped', async () => {
  sink = await startSink((_n, _req, res) => res.writeHead(500, { 'content-type': 'text/plain' }).end(ESCAPES))
  rt = await createTestRuntime()
  const { code, out } = await runCli(['destinations', 'test', 'crm'], cliEnv(rt, { DESTINATIONS: JSON.stringify([destination(sink)]), ALLOW_PRIVATE_DESTINATIONS: 'true' }))
  expect(code).toBe(1)
  expect(out).toBe(`crm: failed with 500 in ${/in (\d+) ms/.exec(out)?.[1]} ms: HTTP 500\n  response: \\x1b]0;pwned\\x07\\x1b[2K\\x0d\\x1b[1Acrm: 200 OK\\x1b]52;c;Y3VybA==\\x07\\x9b2J\n`)
  expect(out).not.toMatch(CONTROL)
})

it('tables (events list) show a webhook\'s text with its control characters escaped', async () => {
  h = await createHarness('sqlite')
  const res = await h.send({ ...makeEvent({ event_id: 'evt_esc' }), event_type: `call.completed${ESCAPES.slice(0, 20)}` })
  expect(res.status).toBe(204)
  const { code, out } = await runCli(['events', 'list'], cliEnv(h.rt))
  expect(code).toBe(0)
  expect(out).toContain('call.completed\\x1b]0;pwned\\x07')
  expect(out).not.toMatch(CONTROL)
})

// A table cut every cell at 60 characters and folded its whitespace: a provider's long event id came out as
// "evt_……" and `events show` with what the table showed found nothing.
it('tables keep an id whole, so what events list shows, events show finds', async () => {
  h = await createHarness('sqlite')
  const id = `evt_${'a1b2c3d4'.repeat(12)}  two-spaces`
  expect((await h.send(makeEvent({ event_id: id }))).status).toBe(204)
  const listed = await runCli(['events', 'list'], cliEnv(h.rt))
  expect(listed.code).toBe(0)
  expect(listed.out).toContain(id)
  const shown = await runCli(['events', 'show', id], cliEnv(h.rt))
  expect(shown.code).toBe(0)
  expect(shown.out).toContain(id)
})

// A U+202E in a webhook's field reversed the rest of the terminal's line (the dashboard showed it escaped): the
// bidirectional overrides, embeddings and isolates are shown as \uNNNN in tables, `events show` and --json alike.
it('bidirectional override characters from a webhook are shown escaped in tables, events show and --json', async () => {
  h = await createHarness('sqlite')
  const id = 'evt_bidi'
  const type = 'call.completed_\u202egnp.exe\u2066x\u2069'
  expect((await h.send({ ...makeEvent({ event_id: id }), event_type: type })).status).toBe(204)
  const BIDI = /[\u202a-\u202e\u2066-\u2069]/
  const listed = await runCli(['events', 'list'], cliEnv(h.rt))
  expect(listed.out).toContain('call.completed_\\u202egnp.exe\\u2066x\\u2069')
  const shown = await runCli(['events', 'show', id], cliEnv(h.rt))
  expect(shown.code).toBe(0)
  const json = await runCli(['events', 'list', '--json'], cliEnv(h.rt))
  for (const out of [listed.out, shown.out, json.out]) expect(out).not.toMatch(BIDI)
  // --json still reads back as what was stored.
  expect((JSON.parse(json.out) as Array<{ event_type: string }>).map((e) => e.event_type)).toEqual([type])
})
