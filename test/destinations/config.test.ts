import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { resolveConfig } from '../../src/config/file.ts'
import { loadConfig } from '../../src/config/load.ts'
import { DEFAULT_RETRY_SCHEDULE_MS } from '../../src/config/destinations.ts'
import { DEST_SECRET } from './helpers.ts'

const load = (env: Record<string, string>) => loadConfig({ env, cwd: '/srv/app' })
const dirs: string[] = []
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})

describe('DESTINATIONS', () => {
  it('is empty by default, and ALLOW_PRIVATE_DESTINATIONS is off', () => {
    expect(load({}).destinations).toEqual({ list: [], allowPrivate: false })
    expect(load({ ALLOW_PRIVATE_DESTINATIONS: '1' }).destinations.allowPrivate).toBe(true)
  })

  it('reads a JSON array from the environment, with defaults: all events, 10 s timeout, ~10 attempts over about a day', () => {
    const [d] = load({ DESTINATIONS: JSON.stringify([{ name: 'crm', url: 'https://crm.example.com/hooks', secret: DEST_SECRET }]) }).destinations.list
    expect(d).toMatchObject({ name: 'crm', secret: [DEST_SECRET], timeoutMs: 10_000, ordered: false, headers: {}, followRedirects: 0 })
    expect(d!.events).toBeUndefined()
    expect(d!.retryScheduleMs).toEqual(DEFAULT_RETRY_SCHEDULE_MS)
    expect(DEFAULT_RETRY_SCHEDULE_MS.length + 1).toBe(10)
    const total = DEFAULT_RETRY_SCHEDULE_MS.reduce((a, b) => a + b, 0)
    expect(total).toBeGreaterThan(20 * 3_600_000)
    expect(total).toBeLessThan(26 * 3_600_000)
  })

  it('names the destination and the field in one line, and never echoes the value (it holds secrets)', () => {
    const bad = (d: Record<string, unknown>) => () => load({ DESTINATIONS: JSON.stringify([{ name: 'crm', url: 'https://crm.example.com', secret: DEST_SECRET, ...d }]) })
    expect(bad({ url: 'http://crm.example.com' })).toThrow('Invalid configuration: DESTINATIONS destination "crm": url must be https (set allowHttp: true to allow plain http)')
    // The scheme as the URL reads it, whatever its case.
    expect(bad({ url: 'HTTP://crm.example.com/h' })).toThrow('Invalid configuration: DESTINATIONS destination "crm": url must be https (set allowHttp: true to allow plain http)')
    // Header values an HTTP client would refuse on every attempt: a line break, a character past ASCII.
    for (const value of ['ops\r\nx-evil: 1', 'Bearer abc – def']) {
      expect(bad({ headers: { 'x-team': value } })).toThrow('Invalid configuration: DESTINATIONS destination "crm": headers.x-team header values may hold printable ASCII, spaces and tabs only (no line breaks, no characters such as “–”)')
    }
    expect(load({ DESTINATIONS: JSON.stringify([{ name: 'crm', url: 'https://crm.example.com', secret: DEST_SECRET, headers: { 'x-team': 'ops\tteam 2' } }]) }).destinations.list[0]!.headers).toEqual({ 'x-team': 'ops\tteam 2' })
    expect(bad({ secret: 'not-a-secret' })).toThrow(/^Invalid configuration: DESTINATIONS destination "crm": secret must be whsec_/)
    // A secret from an environment variable that is not set (during rotation, the old one) is named as missing.
    expect(bad({ secret: [DEST_SECRET, null] })).toThrow('Invalid configuration: DESTINATIONS destination "crm": secret[1] is missing (is the environment variable it comes from set?)')
    expect(bad({ secret: undefined })).toThrow('Invalid configuration: DESTINATIONS destination "crm": secret is missing (is the environment variable it comes from set?)')
    expect(bad({ secret: [DEST_SECRET, 'whsec_short'] })).toThrow('Invalid configuration: DESTINATIONS destination "crm": secret[1] must be whsec_ followed by base64')
    expect(bad({ secret: [] })).toThrow('Invalid configuration: DESTINATIONS destination "crm": secret needs at least one secret')
    expect(bad({ timeoutMs: 5 })).toThrow(/destination "crm": timeoutMs /)
    expect(bad({ headers: { 'webhook-id': 'x' } })).toThrow('Invalid configuration: DESTINATIONS destination "crm": headers may not set "webhook-id": switchboard sets the webhook-* signature headers itself')
    // The event type header is switchboard's word on the event: never the configuration's, in any case.
    expect(bad({ headers: { 'X-Switchboard-Event-Type': 'spoof' } })).toThrow('Invalid configuration: DESTINATIONS destination "crm": headers may not set "X-Switchboard-Event-Type": switchboard sets it on every delivery')
    // Header names are case-insensitive: kept lowercase (so one of ours is replaced, not doubled), two spellings refused.
    expect(load({ DESTINATIONS: JSON.stringify([{ name: 'crm', url: 'https://crm.example.com', secret: DEST_SECRET, headers: { 'User-Agent': 'team-agent', 'X-Team': 'ops' } }]) }).destinations.list[0]!.headers).toEqual({ 'user-agent': 'team-agent', 'x-team': 'ops' })
    expect(bad({ headers: { 'X-Team': 'a', 'x-team': 'b' } })).toThrow('Invalid configuration: DESTINATIONS destination "crm": headers.x-team names a header already set (header names are case-insensitive)')
    // Standard Webhooks' whole `webhook-` namespace is switchboard's (README: "webhook-* … are reserved"), not only the
    // three names it sends today.
    expect(bad({ headers: { 'Webhook-Foo': '1' } })).toThrow('Invalid configuration: DESTINATIONS destination "crm": headers may not set "Webhook-Foo": switchboard sets the webhook-* signature headers itself')
    // A misspelled key is named, with the key it most likely meant.
    expect(bad({ retrySchedule: [1_000] })).toThrow('Invalid configuration: DESTINATIONS destination "crm": has an unknown key "retrySchedule" (did you mean "retryScheduleMs"?)')
    expect(bad({ colour: 'red' })).toThrow(/^Invalid configuration: DESTINATIONS destination "crm": has an unknown key "colour"$/)
    // A name that is not a name is quoted escaped: the error stays one line, and nothing in it moves the cursor.
    for (const name of ['crm\nFAKE LINE', 'crm\u001b[2K\rALL GOOD']) {
      let message = ''
      try {
        load({ DESTINATIONS: JSON.stringify([{ name, url: 'https://crm.example.com', secret: DEST_SECRET }]) })
      } catch (error) {
        message = (error as Error).message
      }
      expect(message).toMatch(/^Invalid configuration: DESTINATIONS destination "crm\\x(0a|1b)[^"]*": name must be letters, digits, - or _ \(at most 63\)$/)
      expect(message).not.toMatch(/[\u0000-\u001f]/)
    }
    expect(() => load({ DESTINATIONS: '[{"url":"https://x.example"}]' })).toThrow(/destination #1: name /)
    expect(() => load({ DESTINATIONS: '{' })).toThrow('Invalid configuration: DESTINATIONS must be a JSON array of destinations')
    expect(() => load({ DESTINATIONS: JSON.stringify([{ name: 'a', url: 'https://x.example', secret: DEST_SECRET }, { name: 'a', url: 'https://y.example', secret: DEST_SECRET }]) })).toThrow(
      /destination "a": name is used twice/,
    )
    try {
      bad({ timeoutMs: 5 })()
    } catch (error) {
      expect((error as Error).message).not.toContain('whsec_')
    }
    expect(load({ DESTINATIONS: JSON.stringify([{ name: 'local', url: 'http://127.0.0.1:9/h', secret: DEST_SECRET, allowHttp: true }]) }).destinations.list).toHaveLength(1)
  })

  it('takes a typed filter function and rotation secrets from switchboard.config.ts', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sb-dest-cfg-'))
    dirs.push(dir)
    writeFileSync(
      join(dir, 'switchboard.config.ts'),
      `import { defineConfig, defineDestination } from 'switchboard'
export default defineConfig({
  DESTINATIONS: [
    defineDestination({
      name: 'warehouse', url: 'https://wh.example.com/in', secret: ['${DEST_SECRET}', 'whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD'],
      events: ['call.completed', 'followup.*'], ordered: true,
      filter: (event) => event.agentId === 101,
    }),
  ],
})
`,
    )
    const config = await resolveConfig({ env: {}, cwd: dir })
    const [d] = config.destinations.list
    expect(d!.secret).toHaveLength(2)
    expect(typeof d!.filter).toBe('function')
    expect(d!.ordered).toBe(true)
  })
})
