import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createServer, type AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { main } from '../../src/cli.ts'
import { resolveConfig } from '../../src/config/file.ts'
import { ensureSandboxSecret } from '../../src/config/load.ts'
import { createApp, renderBanner } from '../../src/server.ts'
import { signFormant } from '../../src/webhooks/index.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { openTestStore } from '../helpers/db.ts'
import { sql } from 'kysely'
import { withDatabase } from '../helpers/stored-data-dir.ts'
import { childEnv, spawnCollecting } from './processes.ts'

const cleanups: Array<() => Promise<void> | void> = []
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn()
})
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'sb-edges-'))
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}
async function testRuntime(env: Record<string, string> = {}): Promise<TestRuntime> {
  const rt = await createTestRuntime({ env })
  cleanups.push(() => rt.close())
  return rt
}

async function run(argv: string[], env: Record<string, string>) {
  let stdout = ''
  let stderr = ''
  const code = await main(argv, { env, stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) })
  return { code, stdout, stderr }
}

/** Every key of a JSON value, at any depth. */
function keysOf(value: unknown): string[] {
  if (Array.isArray(value)) return value.flatMap(keysOf)
  if (value === null || typeof value !== 'object') return []
  return Object.entries(value).flatMap(([k, v]) => [k, ...keysOf(v)])
}

const RECIPE = `import { defineRecipe } from 'switchboard'
export default defineRecipe({ description: 'returns an object', async run() { return { counted: 3, names: ['a', 'b'] } } })
`

describe('report send', () => {
  const env = (dir: string) => ({ DATA_DIR: dir, VOICE_API_KEY: 'sk_live_x', VOICE_API_BASE_URL: 'http://127.0.0.1:9', WEBHOOK_SECRET: 'whsec_x', LOG_LEVEL: 'silent' })

  it('a day that has not begun, or not ended, is said to be so (on stderr: the report itself is unchanged)', async () => {
    const future = await run(['report', 'send', '--date', '2099-01-01', '--timezone', 'UTC', '--dry-run'], env(await withDatabase(tempDir())))
    expect(future.code).toBe(0)
    expect(future.stderr).toBe('note: 2099-01-01 has not begun yet in UTC: the report has nothing in it\n')
    const today = new Date().toISOString().slice(0, 10)
    const partial = await run(['report', 'send', '--date', today, '--timezone', 'UTC', '--dry-run'], env(await withDatabase(tempDir())))
    expect(partial.stderr).toBe(`note: ${today} has not ended yet in UTC: the report covers it up to now\n`)
    const past = await run(['report', 'send', '--date', '2026-11-20', '--dry-run'], env(await withDatabase(tempDir())))
    expect(past.stderr).toBe('')
  })

  it('--dry-run works without a recipient', async () => {
    const r = await run(['report', 'send', '--date', '2026-11-20', '--dry-run'], env(await withDatabase(tempDir())))
    expect(r.stderr).toBe('')
    expect(r.code).toBe(0)
    expect(r.stdout).toContain('to:       (nobody: set REPORT_TO or pass --to to send it)')
    expect(r.stdout).toContain('subject:  switchboard daily report — 2026-11-20')
  })

  it.each([
    // Usually `--to "$OPS_EMAIL"` with the variable unset: a user mistake (exit 2), not a failure (exit 1).
    ['', 'error: --to names no address (is the variable you passed set?); leave it out to send to REPORT_TO\n'],
    [' , ', 'error: --to names no address (is the variable you passed set?); leave it out to send to REPORT_TO\n'],
    ['bob', 'error: --to must be email addresses, comma-separated, as REPORT_TO (got "bob")\n'],
    ['ops@example.com, bob', 'error: --to must be email addresses, comma-separated, as REPORT_TO (got "bob")\n'],
  ])('--to %j is refused with one line, exit 2', async (to, line) => {
    const dir = tempDir()
    const r = await run(['report', 'send', '--date', '2026-11-20', '--to', to], { ...env(dir), REPORT_TO: 'team@example.com' })
    expect(r.stderr).toBe(line)
    expect(r.code).toBe(2)
    expect(r.stdout).toBe('')
  })

  it('--to takes addresses as REPORT_TO does: comma-separated or repeated, with display names', async () => {
    const r = await run(['report', 'send', '--date', '2026-11-20', '--dry-run', '--json', '--to', 'ops@example.com, Team <team@example.com>', '--to', 'cfo@example.com'], env(await withDatabase(tempDir())))
    expect(r.stderr).toBe('')
    expect(r.code).toBe(0)
    expect((JSON.parse(r.stdout) as { to: string[] }).to).toHaveLength(3)
  })

  it('--json is snake_case throughout, like every other --json', async () => {
    const r = await run(['report', 'send', '--date', '2026-11-20', '--dry-run', '--json', '--to', 'ops@example.com'], env(await withDatabase(tempDir())))
    expect(r.code).toBe(0)
    const out = JSON.parse(r.stdout) as Record<string, unknown> & { report: { totals: Record<string, unknown> } }
    expect(out).toMatchObject({ dry_run: true, status: 'planned', mail_id: null, message_id: null, to: ['ops@example.com'] })
    expect(out.report.totals).toHaveProperty('connect_rate')
    expect(keysOf(out).filter((k) => /[A-Z]/.test(k))).toEqual([])
  })
})

describe('recipe summaries are JSON values', () => {
  it('recipes run --json, and the log line of the run, carry summary as a value (real bin)', { timeout: 60_000 }, async () => {
    const recipes = tempDir()
    writeFileSync(join(recipes, 'counter.ts'), RECIPE)
    const spawned = spawnCollecting(process.execPath, ['src/bin.mjs', 'recipes', 'run', 'counter', '--json'], childEnv({ DATA_DIR: tempDir(), RECIPES_DIR: recipes, LOG_LEVEL: 'info', PORT: '0' }))
    expect((await spawned.exited).code).toBe(0)
    expect(JSON.parse(spawned.stdout())).toMatchObject({ status: 'succeeded', summary: { counted: 3, names: ['a', 'b'] } })
    const logLine = spawned
      .stderr()
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { msg?: string; summary?: unknown })
      .find((l) => l.msg === 'recipe run succeeded')
    expect(logLine?.summary).toEqual({ counted: 3, names: ['a', 'b'] })
  })

  it('GET /admin/recipes gives the last run summary as a value', async () => {
    const recipes = tempDir()
    writeFileSync(join(recipes, 'counter.ts'), RECIPE)
    const rt = await testRuntime({ RECIPES_DIR: recipes, ADMIN_TOKEN: ADMIN })
    const app = createApp(rt)
    expect((await app.fetch(new Request('http://localhost/admin/recipes/counter/run', { method: 'POST', headers: bearer }))).status).toBe(200)
    const list = (await (await app.fetch(new Request('http://localhost/admin/recipes', { headers: bearer }))).json()) as { data: Array<{ last_run: { summary: unknown } }> }
    expect(list.data[0]!.last_run.summary).toEqual({ counted: 3, names: ['a', 'b'] })
  })
})

const ADMIN = 'a-token-of-sixteen-chars'
const bearer = { authorization: `Bearer ${ADMIN}` }

describe('/admin errors', () => {
  it('use the service\'s one error body, {"error": {"message", "type"}}, like the proxy and the receiver', async () => {
    const rt = await testRuntime({ ADMIN_TOKEN: ADMIN })
    const app = createApp(rt)
    const shape = { error: { message: expect.any(String), type: expect.any(String) } }
    const proxy = await app.fetch(new Request('http://localhost/v1/conversations'))
    expect(await proxy.json()).toEqual(shape)
    const receiver = await app.fetch(new Request('http://localhost/webhooks/formant', { method: 'POST', body: '{}' }))
    expect(await receiver.json()).toEqual(shape)

    const missing = await app.fetch(new Request('http://localhost/admin/events/evt_nope', { headers: bearer }))
    expect(missing.status).toBe(404)
    expect(await missing.json()).toEqual({ error: { message: 'no webhook event with id "evt_nope"', type: 'not_found' } })
    const bad = await app.fetch(new Request('http://localhost/admin/events?status=weird', { headers: bearer }))
    expect(bad.status).toBe(400)
    expect(await bad.json()).toEqual({ error: { message: expect.stringContaining('status must be one of'), type: 'invalid_request' } })
    const unknownRecipe = await app.fetch(new Request('http://localhost/admin/recipes/nope/run', { method: 'POST', headers: bearer }))
    expect(unknownRecipe.status).toBe(404)
    expect(await unknownRecipe.json()).toEqual({ error: { message: expect.any(String), type: 'not_found' } })

    const noToken = await app.fetch(new Request('http://localhost/admin/events'))
    expect(noToken.status).toBe(401)
    expect(await noToken.json()).toEqual({ error: { message: expect.stringContaining('admin token required'), type: 'authentication_error' } })
  })
})

describe('the start banner', () => {
  it('says where the webhook secret comes from, and names a loaded config file and named targets', async () => {
    const dataDir = tempDir()
    const fromEnv = ensureSandboxSecret(await resolveConfig({ env: { DATA_DIR: dataDir, WEBHOOK_SECRET: 'whsec_c2VjcmV0' }, cwd: dataDir }))
    const banner = renderBanner(fromEnv, 'http://127.0.0.1:3000')
    expect(banner).toContain('/webhooks/formant   (signed with WEBHOOK_SECRET from the environment)')
    expect(banner).not.toContain('webhook-secret')

    const generated = ensureSandboxSecret(await resolveConfig({ env: { DATA_DIR: dataDir }, cwd: dataDir }))
    expect(renderBanner(generated, 'http://127.0.0.1:3000')).toContain(`(signed with the secret kept in ${join(dataDir, 'webhook-secret')})`)

    const file = join(dataDir, 'switchboard.config.ts')
    writeFileSync(file, "export default { WEBHOOK_SECRET: 'whsec_c2VjcmV0', WEBHOOK_TARGETS: { crm: { scheme: 'standard', secrets: 'whsec_Y3JtLXNlY3JldC1jcm0tc2VjcmV0LWNybS1zZWNyZXQ=' } } }\n")
    const fromFile = ensureSandboxSecret(await resolveConfig({ env: { DATA_DIR: dataDir }, cwd: dataDir }))
    const withFile = renderBanner(fromFile, 'http://127.0.0.1:3000')
    expect(withFile).toContain(`(signed with WEBHOOK_SECRET in ${file})`)
    expect(withFile).toContain('webhook target      http://127.0.0.1:3000/webhooks/crm   (standard)')
    expect(withFile).toContain(`config file         ${file}`)
  })
})

describe('events list --json', () => {
  it('rows include the phone number', async () => {
    const rt = await testRuntime()
    const app = createApp(rt)
    const body = JSON.stringify({
      event_id: 'evt_phone_1',
      event_type: 'call.no_answer',
      timestamp: '2026-01-01T00:00:00Z',
      data: { call: { agent_id: 101, conversation_id: 'c_1', status: 'no_answer', to_phone: '+919876543215', call_parameters: { customer_phone: '+919876543215' } } },
    })
    const res = await app.fetch(
      new Request('http://localhost/webhooks/formant', {
        method: 'POST',
        body,
        headers: { 'x-formantai-signature': signFormant(body, 'whsec_test_secret'), 'x-formantai-timestamp': String(Math.floor(rt.clock.now() / 1000)) },
      }),
    )
    expect(res.status).toBe(204)
    const r = await run(['events', 'list', '--json'], { DATA_DIR: rt.dataDir, DATABASE_URL: rt.store.url, WEBHOOK_SECRET: 'whsec_test_secret', LOG_LEVEL: 'silent' })
    expect(r.code).toBe(0)
    expect(JSON.parse(r.stdout)).toEqual([expect.objectContaining({ event_id: 'evt_phone_1', customer_phone: '+919876543215' })])
  })
})

describe('arguments a command never means', () => {
  it('extra words, a single-value option given twice or empty, numbers not in digits and dates Date.parse guesses are each one line, exit 2', async () => {
    const rt = await testRuntime()
    const env = { DATA_DIR: rt.dataDir, DATABASE_URL: rt.store.url, WEBHOOK_SECRET: 'whsec_test_secret', LOG_LEVEL: 'silent' }
    const refused = async (argv: string[], message: string) => expect(await run(argv, env), argv.join(' ')).toEqual({ code: 2, stdout: '', stderr: `error: ${message}\n` })
    await refused(['events', 'list', 'dead'], 'unexpected argument "dead": "events list" takes no arguments. Run "switchboard events list --help".')
    await refused(['events', 'show', 'evt_1', 'evt_2'], 'unexpected argument "evt_2": "events show" takes <id>. Run "switchboard events show --help".')
    await refused(['recipes', 'run', 'a', 'b'], 'unexpected argument "b": "recipes run" takes <name>. Run "switchboard recipes run --help".')
    await refused(['events', 'list', '--status', 'dead', '--status', 'processed'], '--status given twice ("dead", then "processed"): give it once')
    await refused(['events', 'list', '--type', ''], '--type is empty (is the variable you passed set?); leave it out for the default')
    await refused(['calls', 'list', '--recipe', ' '], '--recipe is empty (is the variable you passed set?); leave it out for the default')
    for (const limit of ['0x1', '1e0', '1.5']) await refused(['events', 'list', '--limit', limit], `--limit must be a whole number (got "${limit}")`)
    for (const since of ['March 7', '1']) {
      await refused(['destinations', 'replay', '--destination', 'crm', '--since', since], `--since must be an ISO day (its UTC midnight) or a time with its zone such as 2026-03-01 or 2026-03-01T00:00:00Z (got "${since}")`)
    }
    // migrate names the database it cannot open and what to check, the password hidden, as every other command.
    expect(await run(['migrate'], { ...env, DATABASE_URL: 'postgres://u:hunter2@127.0.0.1:1/app' })).toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/^error: cannot open the database postgres:\/\/\*\*\*@127\.0\.0\.1:1\/app: .*ECONNREFUSED.* — is it running, and is DATABASE_URL right\?\n$/),
    })
    // What is meant still works.
    expect((await run(['events', 'list', '--status', 'dead', '--limit', '5'], env)).code).toBe(0)
  })
})

describe('metrics', () => {
  it('process metrics are switchboard_process_*, not switchboard_process_process_*', async () => {
    const rt = await testRuntime()
    const text = await (await createApp(rt).fetch(new Request('http://localhost/metrics'))).text()
    expect(text).toMatch(/^switchboard_process_cpu_user_seconds_total /m)
    expect(text).not.toContain('switchboard_process_process_')
  })
})

describe('a port or host it cannot listen on', () => {
  /** A port some other program holds (a plain TCP server). */
  async function takenPort(): Promise<number> {
    const blocker = createServer()
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve))
    cleanups.push(() => new Promise<void>((resolve) => blocker.close(() => resolve())))
    return (blocker.address() as AddressInfo).port
  }
  const env = (extra: Record<string, string>) => ({ DATA_DIR: tempDir(), LOG_LEVEL: 'silent', RECONCILE_INTERVAL_SECONDS: '0', ...extra })

  it('serve says the port is taken and what to change (exit 1), not a bare EADDRINUSE', async () => {
    const port = await takenPort()
    const r = await run(['serve'], env({ PORT: String(port), HOST: '127.0.0.1' }))
    expect(r.code).toBe(1)
    expect(r.stderr).toBe(`error: cannot listen on 127.0.0.1:${port}: the port is already in use — another switchboard (or another program) is listening there. Stop it, or set PORT to a free port\n`)
  })

  it('serve says when HOST is not an address of this machine', async () => {
    // 203.0.113.5 is a documentation address (TEST-NET-3): never this machine's, and nothing is sent to it.
    const r = await run(['serve'], env({ PORT: '0', HOST: '203.0.113.5' }))
    expect(r.code).toBe(1)
    expect(r.stderr).toContain('cannot listen on 203.0.113.5:0: 203.0.113.5 is not an address of this machine. Set HOST to one of its addresses')
  })

  it('sandbox names its own flag', async () => {
    const port = await takenPort()
    const r = await run(['sandbox', '--port', String(port)], env({}))
    expect(r.code).toBe(1)
    expect(r.stderr).toContain(`cannot listen on 127.0.0.1:${port}: the port is already in use`)
    expect(r.stderr).toContain('set --port to a free port')
  })
})

describe('reconcile in sandbox mode with no service running', () => {
  it('says the provider is the service\'s own sandbox, and to start it first (exit 1)', async () => {
    // A port nothing listens on: the one a server just gave back.
    const probe = createServer()
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve))
    const port = (probe.address() as AddressInfo).port
    await new Promise<void>((resolve) => probe.close(() => resolve()))
    // A DATA_DIR the service has used (reconcile refuses one with no database).
    const dataDir = tempDir()
    expect((await run(['migrate'], { DATA_DIR: dataDir, LOG_LEVEL: 'silent' })).code).toBe(0)
    const r = await run(['reconcile'], { DATA_DIR: dataDir, PORT: String(port), LOG_LEVEL: 'silent' })
    expect(r.code).toBe(1)
    expect(r.stderr).toContain(`error: cannot reach http://127.0.0.1:${port}/sandbox`)
    expect(r.stderr).toContain('in sandbox mode the provider is the service\'s own sandbox: start the service (npm start), then run reconcile again — or, if it runs with another PORT or HOST, run reconcile with the same\n')
  })
})

describe('reconcile with a key the provider refuses', () => {
  it('names the setting and the provider, and what to do (exit 2)', async () => {
    const { createServer: createHttpServer } = await import('node:http')
    const provider = createHttpServer((_req, res) => {
      res.writeHead(401, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ error: { type: 'authentication_error', message: 'invalid or missing api key' } }))
    })
    await new Promise<void>((resolve) => provider.listen(0, '127.0.0.1', resolve))
    cleanups.push(() => new Promise<void>((resolve) => provider.close(() => resolve())))
    const url = `http://127.0.0.1:${(provider.address() as AddressInfo).port}`
    const dataDir = tempDir()
    expect((await run(['migrate'], { DATA_DIR: dataDir, LOG_LEVEL: 'silent' })).code).toBe(0)
    const r = await run(['reconcile'], { DATA_DIR: dataDir, VOICE_API_KEY: 'sk_live_bad', VOICE_API_BASE_URL: url, WEBHOOK_SECRET: 'whsec_x', LOG_LEVEL: 'silent' })
    expect(r.stderr).toBe(`error: the provider at ${url} refused VOICE_API_KEY (401 authentication_error: invalid or missing api key): copy the workspace key from the provider dashboard into VOICE_API_KEY (doctor checks it)\n`)
    expect(r.code).toBe(2)
  })
})

describe('cli sandbox', () => {
  it('refuses an empty --webhook-secret (an unset variable) instead of sending unsigned webhooks', async () => {
    const r = await run(['sandbox', '--webhook-url', 'http://127.0.0.1:3000/webhooks/formant', '--webhook-secret', ''], { LOG_LEVEL: 'silent' })
    expect(r.code).toBe(2)
    expect(r.stderr).toBe('error: --webhook-secret is empty (is the variable you passed set?); leave it out to use WEBHOOK_SECRET\n')
  })

  it('refuses a placeholder --webhook-secret, and a whsec_ one that is not base64, as WEBHOOK_SECRET is refused', async () => {
    const placeholder = await run(['sandbox', '--port', '0', '--webhook-url', 'http://127.0.0.1:3000/webhooks/formant', '--webhook-secret', 'whsec_CHANGE_ME'], { LOG_LEVEL: 'silent' })
    expect([placeholder.code, placeholder.stderr]).toEqual([2, expect.stringMatching(/^error: --webhook-secret has a placeholder secret \(.*\n$/)])
    const notBase64 = await run(['sandbox', '--port', '0', '--webhook-secret', 'whsec_not base64!'], { LOG_LEVEL: 'silent' })
    expect([notBase64.code, notBase64.stderr]).toEqual([2, expect.stringMatching(/^error: --webhook-secret has a whsec_ secret that is not valid base64 .*\n$/)])
  })

  it('refuses --webhook-url with no secret at all (no flag, no WEBHOOK_SECRET): every webhook would be refused 401', async () => {
    const r = await run(['sandbox', '--port', '0', '--webhook-url', 'http://127.0.0.1:3000/webhooks/formant'], { LOG_LEVEL: 'silent' })
    expect(r.code).toBe(2)
    expect(r.stderr).toBe('error: --webhook-url needs a secret to sign with: set WEBHOOK_SECRET (the one switchboard verifies with) or pass --webhook-secret\n')
  })
})

describe('a command that reads what the service stored, given a DATA_DIR with no database', () => {
  it.each([
    [['events', 'list']],
    [['events', 'show', 'evt_1']],
    [['events', 'replay', 'evt_1']],
    [['calls', 'list', '--json']],
    [['recipes', 'runs']],
    [['destinations', 'list']],
    [['mail', 'list']],
    // It reported an empty day (exit 0) from the database it had just created there, with a webhook secret beside it.
    [['report', 'send', '--dry-run', '--date', '2026-03-01']],
    [['report', 'send', '--to', 'ops@example.com']],
    // It queued the missed events in a new database there (exit 0), which no service ever processed.
    [['reconcile']],
  ])('%j refuses with one line (exit 2) and creates nothing there', async (argv) => {
    const parent = tempDir()
    // A typo, or a relative DATA_DIR run from another folder: the folder the service writes to is elsewhere.
    const dataDir = join(parent, 'dta')
    const r = await run(argv, { DATA_DIR: dataDir, LOG_LEVEL: 'silent' })
    expect(r.stdout).toBe('')
    expect(r.stderr).toBe(`error: no database at ${join(dataDir, 'switchboard.db')}: nothing is stored there — give this command the DATA_DIR (or DATABASE_URL) the service runs with, or start the service first (switchboard serve)\n`)
    expect(r.code).toBe(2)
    expect(existsSync(dataDir)).toBe(false)
  })

  it('reads a database that exists, empty or not', async () => {
    const dataDir = tempDir()
    expect((await run(['migrate'], { DATA_DIR: dataDir, LOG_LEVEL: 'silent' })).code).toBe(0)
    const r = await run(['events', 'list'], { DATA_DIR: dataDir, LOG_LEVEL: 'silent' })
    expect(r.code).toBe(0)
    expect(r.stdout).toMatch(/^\(none\)\nno events stored in sqlite:/)
  })

  // On Postgres the command's runtime migrated what it opened: `events list` given another database (or none: the
  // driver's default) laid switchboard's 25 tables into it and said "no events stored".
  it.skipIf(!process.env.DATABASE_URL_TEST)('on Postgres, refuses a database switchboard never used (exit 2) and creates nothing in it', async () => {
    const empty = await openTestStore('postgres', { migrate: false })
    try {
      const tables = async () => (await sql<{ n: number }>`select count(*)::int as n from information_schema.tables where table_schema = ${empty.schema!}`.execute(empty.db)).rows[0]!.n
      const env = { DATA_DIR: tempDir(), DATABASE_URL: empty.url, LOG_LEVEL: 'silent' }
      for (const argv of [['events', 'list'], ['calls', 'list']]) {
        const r = await run(argv, env)
        expect([r.code, r.stdout], argv.join(' ')).toEqual([2, ''])
        expect(r.stderr).toMatch(/^error: no switchboard tables in postgres:\/\/.+: nothing is stored there — give this command the DATABASE_URL the service runs with \(with its database name\), or start the service first \(switchboard serve; switchboard migrate creates the tables\)\n$/)
      }
      expect(await tables()).toBe(0)
      expect((await run(['migrate'], env)).code).toBe(0)
      expect((await run(['events', 'list'], env)).code).toBe(0)
    } finally {
      await empty.close()
    }
  })
})

describe('a recipe named as its file', () => {
  it('recipes run and recipes runs take "counter.ts" as check and test do', async () => {
    const recipes = tempDir()
    writeFileSync(join(recipes, 'counter.ts'), RECIPE)
    const env = { DATA_DIR: tempDir(), RECIPES_DIR: recipes, LOG_LEVEL: 'silent', RECIPES_TYPECHECK: 'false' }
    const ran = await run(['recipes', 'run', 'counter.ts', '--json'], env)
    expect(ran.stderr).toBe('')
    expect(ran.code).toBe(0)
    expect((JSON.parse(ran.stdout) as { recipe: string; status: string })).toMatchObject({ recipe: 'counter', status: 'succeeded' })
    const runs = await run(['recipes', 'runs', 'counter.ts', '--json'], env)
    expect(runs.code).toBe(0)
    expect((JSON.parse(runs.stdout) as Array<{ recipe: string }>).map((r) => r.recipe)).toEqual(['counter'])
  })
})

it('an option given a value that starts with a dash is one line naming the way to write it, exit 2', async () => {
  const r = await run(['events', 'list', '--limit', '-1'], { DATA_DIR: tempDir(), LOG_LEVEL: 'silent' })
  expect(r.stderr).toBe('error: --limit takes a value, and the next word starts with a dash: write --limit=<value> for a value that starts with one. Run "switchboard events list --help".\n')
  expect(r.code).toBe(2)
})

// Node's own words ("Option '--limit <value>' argument missing.", "Option '--json' does not take an argument.").
it('a flag given no value, or a value it takes none of, is one line in the house style, exit 2', async () => {
  const missing = await run(['events', 'list', '--limit'], { DATA_DIR: tempDir(), LOG_LEVEL: 'silent' })
  expect([missing.code, missing.stderr]).toEqual([2, 'error: --limit needs a value (--limit N). Run "switchboard events list --help".\n'])
  const extra = await run(['events', 'list', '--json=false'], { DATA_DIR: tempDir(), LOG_LEVEL: 'silent' })
  expect([extra.code, extra.stderr]).toEqual([2, 'error: --json takes no value: write --json alone. Run "switchboard events list --help".\n'])
})

describe('the webhook URL opened in a browser', () => {
  it('answers 405 with Allow: POST and says the URL is there, not 404 "no route" (read as a wrong URL); POST still stores', async () => {
    const rt = await testRuntime({ WEBHOOK_SECRET: 'whsec_x' })
    const app = createApp(rt)
    for (const method of ['GET', 'HEAD', 'PUT']) {
      const res = await app.fetch(new Request('http://localhost/webhooks/formant', { method }))
      expect(res.status, method).toBe(405)
      expect(res.headers.get('allow')).toBe('POST')
      if (method !== 'HEAD') {
        expect(await res.json()).toEqual({ error: { type: 'invalid_request', message: `the webhook URL takes signed POSTs from the provider only (got ${method}); it is there — doctor checks it end to end` } })
      }
    }
    const body = JSON.stringify({ event_id: 'evt_browser_1', event_type: 'call.completed', timestamp: new Date().toISOString(), data: { call: { agent_id: 1, conversation_id: 'c_1', status: 'completed' } } })
    const posted = await app.fetch(new Request('http://localhost/webhooks/formant', { method: 'POST', body, headers: { 'content-type': 'application/json', 'x-formantai-signature': signFormant(body, 'whsec_x'), 'x-formantai-timestamp': String(Math.floor(rt.clock.now() / 1000)) } }))
    expect(posted.status).toBe(204)
  })
})
