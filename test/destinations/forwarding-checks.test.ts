import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { resolveConfig } from '../../src/config/file.ts'
import { loadConfig } from '../../src/config/load.ts'
import type { DestinationFilter } from '../../src/config/destinations.ts'
import { recipeDestinations } from '../../src/destinations/publish.ts'
import { captureLogs } from '../helpers/log-capture.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { DEST_SECRET } from './helpers.ts'

const TARGET_SECRET = `whsec_${Buffer.from('crm-secret-crm-secret-crm-secret').toString('base64')}`
const load = (env: Record<string, string>) => loadConfig({ env, cwd: '/srv/app' })
const withEvents = (events: string[], targets: Record<string, string> = {}) => () =>
  load({
    DESTINATIONS: JSON.stringify([{ name: 'alerts', url: 'https://alerts.example.com/h', secret: DEST_SECRET, events }]),
    WEBHOOK_TARGETS: JSON.stringify(Object.fromEntries(Object.entries(targets).map(([name, scheme]) => [name, { scheme, secrets: scheme === 'formant' ? 'whsec_test_secret' : TARGET_SECRET }]))),
  })

const dirs: string[] = []
let rt: TestRuntime | undefined
afterEach(async () => {
  await rt?.close()
  rt = undefined
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})

describe('a destination\'s events, checked against WEBHOOK_TARGETS at start-up', () => {
  // `sdt:*` was accepted, and the destination never got an event of the `std` target.
  it('refuses a target that is not configured, naming the destination, the pattern and the targets there are', () => {
    expect(withEvents(['call.completed', 'sdt:*'], { std: 'standard', crm: 'standard' })).toThrow(
      'Invalid configuration: DESTINATIONS destination "alerts": events lists "sdt:*", but no webhook target is named "sdt": did you mean "std:*"? (WEBHOOK_TARGETS names "std", "crm"; the provider\'s own events take no prefix)',
    )
    expect(withEvents(['warehouse:invoice.paid'], { crm: 'standard' })).toThrow(
      /^Invalid configuration: DESTINATIONS destination "alerts": events lists "warehouse:invoice\.paid", but no webhook target is named "warehouse" \(WEBHOOK_TARGETS names "crm"; the provider's own events take no prefix\)$/,
    )
    expect(withEvents(['crm:*'])).toThrow('destination "alerts": events lists "crm:*", but no webhook target is named "crm" (WEBHOOK_TARGETS names none; the provider\'s own events take no prefix)')
  })

  it('refuses a prefix of the provider\'s own target (its events are named by type alone, as recipes subscribe)', () => {
    expect(withEvents(['formant:call.completed'])).toThrow(
      'Invalid configuration: DESTINATIONS destination "alerts": events lists "formant:call.completed", but target "formant" carries the provider\'s events: list them by type alone, e.g. "call.completed"',
    )
    expect(withEvents(['backup:call.*'], { backup: 'formant' })).toThrow('destination "alerts": events lists "backup:call.*", but target "backup" carries the provider\'s events: list them by type alone, e.g. "call.*"')
  })

  // Taken all the same, they matched nothing: the destination forwarded no event, and nothing said why.
  it('refuses an entry no event can match: a misplaced "*", a space', () => {
    for (const pattern of ['*.completed', 'call*', 'call.*.x', 'crm:*.updated']) {
      expect(withEvents([pattern], { crm: 'standard' }), pattern).toThrow(`Invalid configuration: DESTINATIONS destination "alerts": events[0] "${pattern}" can match no event: "*" stands alone ("*", "crm:*") or ends a prefix ("call.*")`)
    }
    expect(withEvents(['call.completed '])).toThrow('"call.completed " has a space in it, which no event type has')
    expect(withEvents([' call.completed'])).toThrow('" call.completed" has a space in it, which no event type has')
  })

  it('takes bare types, wildcards and the events of a configured target', () => {
    const [d] = withEvents(['*', 'call.*', 'followup.scheduled', 'crm:contact.updated', 'crm:*'], { crm: 'standard' })().destinations.list
    expect(d!.events).toEqual(['*', 'call.*', 'followup.scheduled', 'crm:contact.updated', 'crm:*'])
  })
})

describe('a destination\'s filter', () => {
  const file = (filter: unknown) => () =>
    loadConfig({ env: { DATA_DIR: '/tmp/unused' }, file: { DESTINATIONS: [{ name: 'crm', url: 'https://crm.example.com/hook', secret: DEST_SECRET, filter }] } })

  // An async filter's Promise never was `true`: every event was dropped, without a word.
  it('is refused at start-up when it is async or a generator: what it returns is never a verdict', () => {
    expect(file(async () => true)).toThrow(
      'Invalid configuration: DESTINATIONS destination "crm": filter must be a plain function that returns true or false: an async function returns a Promise, which forwarding cannot wait for (decide from the event alone; a recipe can look things up and publish an event instead)',
    )
    expect(file(function* () {
      yield true
    })).toThrow('destination "crm": filter must be a plain function that returns true or false: a generator function returns an iterator')
    expect(file(async function* () {
      yield true
    })).toThrow('destination "crm": filter must be a plain function that returns true or false: an async generator function returns an iterator')
    expect(file(() => true)().destinations.list[0]!.filter).toBeTypeOf('function')
  })

  it('is refused when async in switchboard.config.ts too, as the config file loader hands it over', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sb-dest-async-'))
    dirs.push(dir)
    writeFileSync(
      join(dir, 'switchboard.config.ts'),
      `export default {
  DESTINATIONS: [{ name: 'crm', url: 'https://crm.example.com/hook', secret: '${DEST_SECRET}', filter: async (event: { agentId: number | null }) => event.agentId === 101 }],
}
`,
    )
    await expect(resolveConfig({ env: {}, cwd: dir })).rejects.toThrow('destination "crm": filter must be a plain function that returns true or false: an async function returns a Promise')
  })

  /** A runtime with one destination `crm` whose filter is `filter`, as switchboard.config.ts would give it. */
  async function runtimeFiltering(filter: DestinationFilter) {
    const logs = captureLogs('info')
    rt = await createTestRuntime({ log: logs.log, env: { DESTINATIONS: JSON.stringify([{ name: 'crm', url: 'https://crm.example.com/h', secret: DEST_SECRET }]) } })
    rt.config = { ...rt.config, destinations: { ...rt.config.destinations, list: rt.config.destinations.list.map((d) => ({ ...d, filter })) } }
    const publish = (n: number) => recipeDestinations(rt!, { dryRun: false, plan: [] }, 'r').publish('followup.scheduled', { n })
    return { logs, publish }
  }

  // A Promise that slipped past the check (a plain function that returns one) dropped every event silently.
  it('that returns a Promise forwards the event, and says once for the destination that the filter is wrong', async () => {
    let calls = 0
    const { logs, publish } = await runtimeFiltering((() => (++calls === 1 ? Promise.resolve(false) : Promise.reject(new Error('lookup failed')))) as unknown as DestinationFilter)
    expect((await publish(1)).destinations).toEqual(['crm'])
    expect((await publish(2)).destinations).toEqual(['crm'])
    expect(await rt!.store.db.selectFrom('destination_deliveries').select('destination').execute()).toHaveLength(2)
    const said = logs.find(/destination filter returned a Promise/)
    expect(said).toHaveLength(1)
    expect(said[0]).toMatchObject({ level: 50, destination: 'crm' })
    expect(said[0]!.msg).toBe('destination filter returned a Promise: a filter must be synchronous and return true or false; its events are forwarded unfiltered until it is fixed')
  })

  it('that returns something other than true or false is read as a condition, and said once for the destination', async () => {
    const answers: unknown[] = [undefined, 1, null, 'yes', false, true]
    const { logs, publish } = await runtimeFiltering((() => answers.shift()) as unknown as DestinationFilter)
    const sent = []
    for (let n = 0; n < 6; n++) sent.push((await publish(n)).destinations)
    expect(sent).toEqual([[], ['crm'], [], ['crm'], [], ['crm']])
    const said = logs.find(/destination filter returned/)
    expect(said).toHaveLength(1)
    expect(said[0]).toMatchObject({ level: 40, destination: 'crm', returned: 'undefined' })
    expect(said[0]!.msg).toMatch(/^destination filter returned undefined, not true or false: read as a condition is \(undefined, null, 0, '' and NaN skip an event/)
  })

  it('that returned another value first still has its Promise said as the error it is (one warning hid it)', async () => {
    const answers: unknown[] = [undefined, Promise.resolve(false), Promise.resolve(true), 0]
    const { logs, publish } = await runtimeFiltering((() => answers.shift()) as unknown as DestinationFilter)
    for (let n = 0; n < 4; n++) await publish(n)
    expect(logs.find(/destination filter returned a Promise/)).toHaveLength(1)
    expect(logs.find(/destination filter returned (undefined|a number)/)).toHaveLength(1)
  })
})

describe('a destination\'s headers', () => {
  const withHeaders = (headers: Record<string, string>) => () =>
    load({ DESTINATIONS: JSON.stringify([{ name: 'x', url: 'https://x.example.com/h', secret: DEST_SECRET, headers }]) })

  // undici refuses these at send time (every attempt failed); te, trailer and proxy-connection are hop-by-hop as well.
  it('may not set the connection\'s own headers, refused at start-up with the header named as given and why', () => {
    expect(withHeaders({ Expect: '100-continue' })).toThrow(
      'Invalid configuration: DESTINATIONS destination "x": headers may not set "Expect": switchboard\'s HTTP client sets the connection\'s headers itself (host, content-length and the hop-by-hop ones)',
    )
    for (const name of ['keep-alive', 'Upgrade', 'connection', 'Transfer-Encoding', 'TE', 'trailer', 'Proxy-Connection', 'host', 'Content-Length']) {
      expect(withHeaders({ [name]: '1' })).toThrow(`destination "x": headers may not set "${name}": switchboard's HTTP client sets the connection's headers itself`)
    }
    expect(withHeaders({ 'Content-Type': 'text/plain' })).toThrow('destination "x": headers may not set "Content-Type": switchboard sets it on every delivery')
    expect(withHeaders({ 'x-team': 'ops', 'Keep-Alive-Hint': '1' })().destinations.list[0]!.headers).toEqual({ 'x-team': 'ops', 'keep-alive-hint': '1' })
  })
})
