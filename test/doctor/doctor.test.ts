import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import BetterSqlite3 from 'better-sqlite3'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { main } from '../../src/cli.ts'
import { startServer, type RunningServer } from '../../src/server.ts'
import { closedPort, startSmtp } from '../reports/smtp.ts'
import { enqueueEventFires } from '../../src/recipes/claims.ts'
import { discardRecipeQueue } from '../../src/recipes/queue-control.ts'
import { tempRecipesDir } from '../recipes/helpers.ts'
import { shippedRecipesCopy } from '../helpers/recipes.ts'
import { DOCTOR_PROBE_ANSWER } from '../../src/webhooks/doctor-probe.ts'

// doctor against real things: a SQLite file, the service with its sandbox running in-process, a real
// SMTP server (smtp-server), and ports with nothing behind them.

const SECRET = 'whsec_doctor_secret'
const RECIPES = shippedRecipesCopy()
let server: RunningServer
let smtp: Awaited<ReturnType<typeof startSmtp>>
const dirs: string[] = []
let dataDir: string

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'sb-doctor-'))
  dirs.push(dataDir)
  smtp = await startSmtp()
  server = await startServer({ env: { DATA_DIR: dataDir, PORT: '0', WEBHOOK_SECRET: SECRET, LOG_LEVEL: 'silent', RECIPES_DIR: RECIPES, RECONCILE_INTERVAL_SECONDS: '0' }, background: false })
})
afterAll(async () => {
  await server?.close()
  await smtp?.close()
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

async function doctor(env: Record<string, string>, json = false) {
  let stdout = ''
  let stderr = ''
  const base = { DATA_DIR: dataDir, PORT: String(server.port), WEBHOOK_SECRET: SECRET, LOG_LEVEL: 'silent', RECIPES_DIR: RECIPES, SMTP_URL: `smtp://127.0.0.1:${smtp.port}` }
  const code = await main(['doctor', ...(json ? ['--json'] : [])], { env: { ...base, ...env }, stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) })
  return { code, stdout, stderr, lines: stdout.trimEnd().split('\n') }
}

describe('doctor', () => {
  it('all is well: one ok line per check, exit 0', async () => {
    const r = await doctor({})
    expect(r.stderr).toBe('')
    expect(r.code).toBe(0)
    expect(r.lines).toHaveLength(10)
    expect(r.lines[0]).toMatch(/^ok\s+configuration\s+sandbox mode/)
    expect(r.lines[1]).toMatch(/^ok\s+database\s+sqlite reachable, migrations applied$/)
    expect(r.lines[2]).toMatch(/^ok\s+recipes\s+3 load \(daily-report, nightly-batch, no-answer-followup\)$/)
    expect(r.lines[3]).toMatch(/^ok\s+smtp\s+127\.0\.0\.1:\d+ accepts connections \(for daily-report\)$/)
    expect(r.lines[4]).toMatch(/^ok\s+upstream key\s+the sandbox demo key is accepted by http:\/\/127\.0\.0\.1:\d+\/sandbox$/)
    expect(r.lines[5]).toMatch(/^ok\s+webhook url\s+http:\/\/127\.0\.0\.1:\d+\/webhooks\/formant answers and accepts this secret \(WEBHOOK_SECRET from the environment\)$/)
    expect(r.lines[6]).toBe(`ok       disk           ${r.lines[6]!.match(/disk\s+(\S+ \S+) free/)![1]} free where DATA_DIR is (${dataDir})`)
    expect(r.lines[7]).toMatch(/^ok\s+folders\s+this user \(.*uid \d+\) may write in DATA_DIR and its folders$/)
    expect(r.lines[8]).toMatch(/^ok\s+service\s+http:\/\/127\.0\.0\.1:\d+ is ready$/)
    expect(r.lines[9]).toBe('doctor: no problems found')
    // Its probe of the webhook URL is no rejected webhook: doctor run as a periodic check adds none to the metrics
    // (nor to the log's warnings and the report's webhook health: test/webhooks/refusal-logs.test.ts).
    expect((await server.rt.metrics.getMetricsAsJSON()).find((m) => m.name === 'switchboard_webhooks_rejected_total')?.values ?? []).toEqual([])
  })

  it('--json gives the same checks as objects', async () => {
    const r = await doctor({}, true)
    expect(r.code).toBe(0)
    const out = JSON.parse(r.stdout) as { ok: boolean; checks: Array<{ name: string; status: string; fix: string | null }> }
    expect(out.ok).toBe(true)
    expect(out.checks.map((c) => [c.name, c.status])).toEqual([
      ['configuration', 'ok'], ['database', 'ok'], ['recipes', 'ok'], ['smtp', 'ok'], ['upstream key', 'ok'], ['webhook url', 'ok'], ['disk', 'ok'], ['folders', 'ok'], ['service', 'ok'],
    ])
  })

  it('a refused key, a different secret and a relay that is down are problems with what to fix; exit 1', async () => {
    const r = await doctor({
      VOICE_API_KEY: 'sk_test_disabled',
      VOICE_API_BASE_URL: `${server.url}/sandbox`,
      WEBHOOK_SECRET: 'whsec_some_other_secret',
      SMTP_URL: `smtp://127.0.0.1:${await closedPort()}`,
    })
    expect(r.code).toBe(1)
    expect(r.lines.find((l) => l.includes('smtp'))).toMatch(/^PROBLEM\s+smtp\s+127\.0\.0\.1:\d+: .*ECONNREFUSED.* → check SMTP_URL/)
    expect(r.lines.find((l) => l.includes('upstream key'))).toMatch(/^PROBLEM\s+upstream key\s+VOICE_API_KEY is refused by .*\(401\) → copy the workspace key/)
    expect(r.lines.find((l) => l.includes('webhook url'))).toMatch(/^PROBLEM\s+webhook url\s+.*refused a delivery signed with WEBHOOK_SECRET from the environment → give doctor and the service the same WEBHOOK_SECRET/)
    expect(r.lines.at(-1)).toBe('doctor: 3 problem(s) to fix')
  })

  it('a relay that quotes the credentials it refused does not put SMTP_URL\'s password on the screen', async () => {
    const quoting = await startSmtp({
      authOptional: false,
      allowInsecureAuth: true,
      onAuth(auth, _session, callback) {
        callback(Object.assign(new Error(`Invalid credentials for ${auth.username}:${auth.password}`), { responseCode: 535 }))
      },
    })
    try {
      const r = await doctor({ SMTP_URL: `smtp://reports:s3cr3tP%40ss@127.0.0.1:${quoting.port}` })
      const line = r.lines.find((l) => l.includes('smtp'))
      expect(line).toMatch(/^PROBLEM\s+smtp\s+127\.0\.0\.1:\d+: EAUTH: .*Invalid credentials for reports:\[redacted\] → check SMTP_URL/)
      expect(r.lines.join('\n')).not.toContain('s3cr3t')
    } finally {
      await quoting.close()
    }
  })

  it('a recipe removed while events still wait for it is a problem, until its queue is given up', async () => {
    await enqueueEventFires(server.rt, [{ recipe: 'retired', eventId: 'evt_doctor_1' }, { recipe: 'retired', eventId: 'evt_doctor_2' }])
    const r = await doctor({})
    expect(r.code).toBe(1)
    expect(r.lines[2]).toBe(`PROBLEM  recipes        "retired" is no longer in ${RECIPES} but 2 events still wait for it, and nothing runs them → give them up: switchboard recipes discard retired (or put its file or "on" back)`)
    await discardRecipeQueue(server.rt, 'retired')
    expect((await doctor({})).lines[2]).toMatch(/^ok\s+recipes\s+3 load/)
  })

  // On a worker's host, doctor run with the worker's PORT found a switchboard with no /webhooks and blamed "another program".
  it("a worker's PORT: the webhook URL is skipped as the worker's, not blamed on another program", async () => {
    const workerDir = mkdtempSync(join(tmpdir(), 'sb-doctor-worker-'))
    dirs.push(workerDir)
    const worker = await startServer({
      env: { DATA_DIR: workerDir, PORT: '0', WEBHOOK_SECRET: SECRET, LOG_LEVEL: 'silent', RECIPES_DIR: RECIPES, RECONCILE_INTERVAL_SECONDS: '0', VOICE_API_KEY: 'sk_test_acme', VOICE_API_BASE_URL: `${server.url}/sandbox` },
      role: 'worker',
      background: false,
    })
    try {
      const r = await doctor({ DATA_DIR: workerDir, PORT: String(worker.port), VOICE_API_KEY: 'sk_test_acme', VOICE_API_BASE_URL: `${server.url}/sandbox` })
      expect(r.lines.find((l) => l.includes('webhook url'))).toMatch(/^skipped\s+webhook url\s+http:\/\/127\.0\.0\.1:\d+ is a switchboard worker \(--role worker\), which receives no webhooks: run doctor with a receiver's PORT/)
      expect(r.code).toBe(0)
    } finally {
      await worker.close()
    }
  })

  it('service not running: says so, and skips what needs it', async () => {
    const r = await doctor({ PORT: String(await closedPort()) })
    expect(r.code).toBe(0)
    expect(r.lines.find((l) => l.includes('webhook url'))).toMatch(/^skipped\s+webhook url\s+service not running at http:\/\/127\.0\.0\.1:\d+: start it \(npm start\), then run doctor again — or, if it runs with another PORT or HOST, run doctor with the same$/)
    expect(r.lines.find((l) => l.includes('upstream key'))).toMatch(/^skipped\s+upstream key\s+sandbox mode/)
    // Nothing found wrong, but not everything was looked at: the summary says so.
    expect(r.lines.find((l) => /^\S+\s+service\s/.test(l))).toMatch(/^skipped\s+service\s+not running at http:\/\/127\.0\.0\.1:\d+$/)
    expect(r.lines.at(-1)).toMatch(/^doctor: no problems found in what could be checked — the service is not running at http:\/\/127\.0\.0\.1:\d+ \(3 checks skipped, see above\)$/)
  })

  it('a database that is not migrated, and invalid configuration, stop the checks that need them', async () => {
    const fresh = mkdtempSync(join(tmpdir(), 'sb-doctor-fresh-'))
    dirs.push(fresh)
    // Before the first start: no database to check yet, and doctor makes none (no database file, no webhook secret) —
    // but what needs no stored data is still checked, on an empty database in memory: the recipes, the mail relay.
    const before = await doctor({ DATA_DIR: fresh, WEBHOOK_SECRET: '' })
    expect(before.code).toBe(0)
    expect(before.lines[1]).toBe(`ok       database       not created yet: npm start (or switchboard migrate) creates ${join(fresh, 'switchboard.db')}`)
    expect(before.lines[2]).toMatch(/^ok\s+recipes\s+3 load \(daily-report, nightly-batch, no-answer-followup\)$/)
    expect(before.lines[3]).toMatch(/^ok\s+smtp\s+127\.0\.0\.1:\d+ accepts connections \(for daily-report\)$/)
    expect(readdirSync(fresh).filter((f) => f !== 'cache')).toEqual([])
    // A recipe that does not load is found before the first start too.
    const broken = tempRecipesDir()
    try {
      broken.write('typo', `import { defineRecipe } from 'switchboard'\nexport default defineRecipe({ description: 'x', schedule: '0 25 * * *', run: () => 1 })\n`)
      const found = await doctor({ DATA_DIR: fresh, WEBHOOK_SECRET: '', RECIPES_DIR: broken.dir })
      expect(found.code).toBe(1)
      expect(found.lines[2]).toMatch(/^PROBLEM\s+recipes\s+1 of 1 do not load: typo: /)
      expect(readdirSync(fresh).filter((f) => f !== 'cache')).toEqual([])
    } finally {
      broken.cleanup()
    }
    // A database file with no tables (made by another program, or a start that stopped before migrating).
    writeFileSync(join(fresh, 'switchboard.db'), '')
    const unmigrated = await doctor({ DATA_DIR: fresh })
    expect(unmigrated.code).toBe(1)
    expect(unmigrated.lines[1]).toMatch(/^PROBLEM\s+database\s+sqlite is reachable, not migrated \(switchboard never used it\) → run: switchboard migrate/)
    // From a checkout (`npm run cli`), the hint is the command to type there.
    const fromCheckout = await doctor({ DATA_DIR: fresh, npm_lifecycle_event: 'cli' })
    expect(fromCheckout.lines[1]).toMatch(/→ run: npm run -s cli -- migrate \(serve also migrates at start-up\)$/)
    expect(unmigrated.lines[2]).toMatch(/^skipped\s+recipes\s+needs a reachable, migrated database$/)
    // An earlier version's database (its last migration not applied yet): which migrations an upgrade will apply.
    const earlier = mkdtempSync(join(tmpdir(), 'sb-doctor-earlier-'))
    try {
      expect(await main(['migrate'], { env: { DATA_DIR: earlier, SWITCHBOARD_CONFIG: 'none', LOG_LEVEL: 'silent' }, stdout: () => {}, stderr: () => {} })).toBe(0)
      const db = new BetterSqlite3(join(earlier, 'switchboard.db'))
      const last = db.prepare('select name from switchboard_migrations order by name desc limit 1').get() as { name: string }
      const total = (db.prepare('select count(*) as n from switchboard_migrations').get() as { n: number }).n
      db.prepare('delete from switchboard_migrations where name = ?').run(last.name)
      db.close()
      const behind = await doctor({ DATA_DIR: earlier })
      expect(behind.code).toBe(1)
      expect(behind.lines[1]).toBe(`PROBLEM  database       sqlite is reachable, ${total - 1} of ${total} migrations applied (an earlier version's): ${last.name} pending → run: switchboard migrate (serve also migrates at start-up)`)
    } finally {
      rmSync(earlier, { recursive: true, force: true })
    }

    if (process.env.DATABASE_URL_TEST) {
      // A Postgres schema that does not exist: the database check's problem, exit 1, not doctor failing (exit 2).
      const base = process.env.DATABASE_URL_TEST
      const noSchema = await doctor({ DATABASE_URL: `${base}${base.includes('?') ? '&' : '?'}options=${encodeURIComponent('-c search_path=sb_doctor_missing')}` })
      expect(noSchema.code).toBe(1)
      expect(noSchema.lines[1]).toMatch(/^PROBLEM\s+database\s+DATABASE_URL selects the schema sb_doctor_missing .* → fix what the message names/)
    }

    const badConfig = await doctor({ DEFAULT_COUNTRY: 'XX' })
    expect(badConfig.code).toBe(1)
    expect(badConfig.lines[0]).toMatch(/^PROBLEM\s+configuration\s+DEFAULT_COUNTRY is not a country .* → fix that setting/)
    expect(badConfig.lines.slice(1, -1).every((l) => l.startsWith('skipped'))).toBe(true)
  })
})

// A full disk refuses every webhook (503) and the service says so on /readyz: doctor said "no problems found".
describe('doctor: the disk and what the running service says of itself', () => {
  it('too little free space where DATA_DIR is is a problem; DATA_DIR not made yet is skipped', async () => {
    const { checkDisk } = await import('../../src/doctor/checks.ts')
    expect(checkDisk(dataDir)).toMatchObject({ name: 'disk', status: 'ok' })
    expect(checkDisk(dataDir, Number.MAX_SAFE_INTEGER)).toEqual({
      name: 'disk', status: 'problem',
      detail: expect.stringMatching(new RegExp(`^\\S+ \\S+ free where DATA_DIR is \\(${dataDir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\): when it is full, every webhook is refused \\(503\\) until space is freed$`)),
      fix: 'free disk space there, or move DATA_DIR to a larger disk (README → Operations)',
    })
    expect(checkDisk(join(dataDir, 'not-yet'))).toMatchObject({ status: 'skipped', detail: `${join(dataDir, 'not-yet')} does not exist yet: the first start makes it` })
  })

  // "does not exist yet: the first start makes it", and "no problems found" — then serve refused it (exit 2).
  it('a DATA_DIR not made yet that serve could not make is a problem in its words; one it can make is skipped', async () => {
    const { checkDataFolders } = await import('../../src/doctor/checks.ts')
    expect(checkDataFolders(join(dataDir, 'not-yet', 'data'))).toMatchObject({ status: 'skipped' })
    const file = join(dataDir, 'a-file')
    writeFileSync(file, 'x')
    expect(checkDataFolders(join(file, 'sub', 'data'))).toEqual({
      name: 'folders', status: 'problem',
      detail: `${join(file, 'sub', 'data')} cannot be created: ${file} is a file, not a folder. Move it aside, or set DATA_DIR to a folder`,
      fix: 'create DATA_DIR for this user, or set it to a folder this user may create (README → Operations → Data)',
    })
    rmSync(file)
  })

  it("the service's own unavailable or behind is a problem with its reason; a dependency down is left to its own check", async () => {
    const { checkService } = await import('../../src/doctor/checks.ts')
    const answer = (status: number, body: unknown) => async () => new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } })
    const full = await checkService(server.rt, true, answer(503, { status: 'unavailable', error: 'the last webhook could not be stored (storage is full); deliveries are answered 503 until one is' }))
    expect(full).toMatchObject({ status: 'problem', detail: expect.stringMatching(/ is not ready: the last webhook could not be stored \(storage is full\)/) })
    const behind = await checkService(server.rt, true, answer(200, { status: 'degraded', reason: 'the oldest unprocessed event is 900 s old (BACKLOG_DEGRADED_SECONDS=300)' }))
    expect(behind).toMatchObject({ status: 'problem', detail: expect.stringMatching(/ is degraded: the oldest unprocessed event is 900 s old/) })
    const relay = await checkService(server.rt, true, answer(200, { status: 'degraded', dependencies: { database: 'up', smtp: 'down: ECONNREFUSED', upstream: 'up' } }))
    expect(relay).toMatchObject({ status: 'ok', detail: expect.stringMatching(/ is up, degraded \(smtp down\)$/) })
  })
})

// A SQLite file that cannot be opened was told to "check DATABASE_URL and that the database is up": a file has no "up".
it('a SQLite database that cannot be opened says what stands in the way: the file system', async () => {
  const r = await doctor({ DATABASE_URL: `sqlite:${dataDir}` })
  expect(r.code).toBe(1)
  expect(r.lines[1]).toMatch(/^PROBLEM\s+database\s+cannot open sqlite: .* → check that this process can write DATA_DIR and the database file \(owner, mode, a read-only mount\) and that the disk has room$/)
  // The free space it names is measured all the same: it needs no database (it was skipped, "needs the database").
  expect(r.lines.find((l) => /^\S+\s+disk\s/.test(l))).toMatch(/^ok\s+disk\s+\S.* free where DATA_DIR is/)
  expect(r.lines.find((l) => /^\S+\s+recipes\s/.test(l))).toMatch(/^skipped\s+recipes\s+needs the database/)
  // A file that is no database: what serve says to do, not to check the file's owner and mode.
  const damaged = join(mkdtempSync(join(tmpdir(), 'sb-doctor-damaged-')), 'switchboard.db')
  writeFileSync(damaged, 'garbage, not a database\n'.repeat(10))
  const notDb = await doctor({ DATABASE_URL: `sqlite:${damaged}` })
  expect(notDb.lines[1]).toMatch(/^PROBLEM\s+database\s+cannot open sqlite: .*SQLITE_NOTADB.* → the file is not a SQLite database or is damaged: restore it from a backup \(README → Operations\), or move it aside to start with an empty one$/)
  rmSync(dirname(damaged), { recursive: true, force: true })
})

// Replicas whose call queues share the key spend its limit routinely: doctor said to check the region and the network.
it('a provider answering 429 accepts the key: ok, said so', async () => {
  const { createServer } = await import('node:http')
  const limited = createServer((_req, res) => res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '30' }).end('{"error":{"type":"rate_limit_exceeded","message":"rate limit exceeded"}}'))
  await new Promise<void>((resolve) => limited.listen(0, '127.0.0.1', resolve))
  try {
    const port = (limited.address() as { port: number }).port
    const r = await doctor({ VOICE_API_KEY: 'sk_live_limited', VOICE_API_BASE_URL: `http://127.0.0.1:${port}` })
    expect(r.lines.find((l) => /^\S+\s+upstream key\s/.test(l))).toBe(`ok       upstream key   VOICE_API_KEY is accepted by http://127.0.0.1:${port} (its rate limit is spent right now: 429)`)
  } finally {
    await new Promise((resolve) => limited.close(resolve))
  }
})

it("the webhook URL: a receiver before 0.25.3 (400, no event id) passes; another program's 200 does not, however long", async () => {
  const { createServer } = await import('node:http')
  let webhookAnswer = { status: 400, body: '{"error":{"type":"invalid_request","message":"event id missing"}}' }
  const standIn = createServer((req, res) => {
    if (req.url === '/healthz') return void res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}')
    if (req.url === '/webhooks/formant') return void res.writeHead(webhookAnswer.status, { 'content-type': 'application/json' }).end(webhookAnswer.body)
    res.writeHead(404).end()
  })
  await new Promise<void>((resolve) => standIn.listen(0, '127.0.0.1', resolve))
  try {
    const port = (standIn.address() as { port: number }).port
    const line = async () => (await doctor({ PORT: String(port) })).lines.find((l) => /^\S+\s+webhook url\s/.test(l))
    expect(await line()).toBe(`ok       webhook url    http://127.0.0.1:${port}/webhooks/formant answers and accepts this secret (WEBHOOK_SECRET from the environment)`)
    // This release's receiver answers the probe in a few dozen bytes; no more than a KB of an answer is read.
    webhookAnswer = { status: 200, body: DOCTOR_PROBE_ANSWER }
    expect(await line()).toMatch(/^ok\s+webhook url\s/)
    for (const body of ['{"ok":true}', DOCTOR_PROBE_ANSWER + ' '.repeat(5_000_000)]) {
      webhookAnswer = { status: 200, body }
      expect(await line()).toMatch(/^PROBLEM\s+webhook url\s+http:\/\/127\.0\.0\.1:\d+\/webhooks\/formant answered 200, not a switchboard receiver/)
    }
  } finally {
    await new Promise((resolve) => standIn.close(resolve))
  }
})
