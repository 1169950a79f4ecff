/**
 * The whole service under a burst (DESIGN.md → Budgets), started as a user does: `node src/bin.mjs serve`
 * in its own process (processing in its thread), the shipped recipes, the embedded sandbox. Measured
 * against a bare h3 handler that reads the same bodies, in the same run:
 *   1. ingest while processing: a burst of signed events (one third each completed / no_answer / busy, distinct
 *      contacts) — receiver throughput vs bare, then p99 at 1,000 events/s offered while the backlog drains;
 *   2. end to end: a second burst, once the first has drained, from its first event sent to its last one fully
 *      processed (read model, every consumer, recipe queues empty) — events per second vs bare;
 *   3. the real flow: 3,000 calls placed through the proxy to distinct numbers ending in 5, sandbox at
 *      SANDBOX_FAULTS=latency_ms=100 with its limits raised — lag from the last call.no_answer stored to the
 *      last follow-up scheduled, duplicates, failures;
 *   4. the sandbox's default limits (600 requests/min, 10 concurrent calls): follow-ups wait on 429s, none fail.
 * Both the bare handler and the service are warmed with the same 3,000 events first (BENCH_WARMUP): a
 * campaign's burst meets a service that has run, whose hot code V8 has compiled — cold, the first seconds of
 * a burst spent over a core on V8's background compiler threads, and the bare handler ran slower too.
 * Steps 1 and 2 run in BENCH_ROUNDS rounds (default 2) on the same service, each between two bursts of the bare
 * handler (a round's ratios use their mean); every round is printed and each budget is judged on its best round,
 * as `ingest` judges its best of three: on this shared 2-core machine the host stalls the guest for 20–100 ms at
 * random moments (seen in the bare handler's own p99 at 1,000/s: 72–95 ms in some runs), and one stall inside the
 * paced 3 s decides a p99 of 3,000 requests.
 * Step 1 also prints where the cores went (the service's main thread, its other threads, this load generator)
 * during the burst, during the bare handler's burst (CPU per event, service against bare, is steadier than the
 * throughput ratio on a host whose speed moves by a third between minutes) and over the paced seconds; step 2
 * prints it for its burst and for the drain after it (processing alone, on one core).
 * Each service's do-not-call list holds BENCH_DNC numbers (default 50,000), as a user's would.
 * BENCH_NODE_FLAGS (space-separated) adds Node/V8 flags to the service's process, for experiments.
 * BENCH_RECIPES_DIR runs the services on another recipes folder (default: the shipped `recipes/`) — an empty one
 * measures processing without recipe work, for experiments; the budgets are judged with the shipped recipes.
 * Budgets: 1 ≥ 0.6× bare and p99 ≤ 20 ms; 2 ≥ 0.25× bare; 3 ≤ 10 s, 0 duplicates, 0 failed; 4 0 failed.
 * Loopback only; every wait is bounded.
 */
import { createBareWebhookApp } from './bare-webhook-app.ts'
import { providerIds } from './provider-ids.ts'
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import http from 'node:http'
import { cpus, tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import BetterSqlite3 from 'better-sqlite3'
import { freePort } from '../helpers/free-port.ts'

const ROOT = resolve(fileURLToPath(import.meta.url), '../../..')
const SECRET = 'whsec_bench_pipeline'
const CONCURRENCY = 128
const BURST = Number(process.env.BENCH_BURST ?? 15_000)
const RATE = 1_000
const WARMUP = Number(process.env.BENCH_WARMUP ?? 3_000)
const RATE_MS = 3_000
const FLOW_CALLS = Number(process.env.BENCH_FLOW_CALLS ?? 3_000)
const LIMITS_CALLS = Number(process.env.BENCH_LIMITS_CALLS ?? 400)
/** Rounds of steps 1 and 2 (BENCH_ROUNDS); each budget is judged on its best round, as `ingest` judges its best of three. */
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 2))
/**
 * Numbers on the service's do-not-call list (the `dnc` table: imported, or added by results), none of them a number the
 * benchmark calls (BENCH_DNC). A user's list, not an empty one: the follow-up recipe screens every batch against it.
 */
const DNC_NUMBERS = Number(process.env.BENCH_DNC ?? 50_000)
/**
 * Events already handled when the burst arrives (BENCH_HISTORY, default 0: an empty database): each with its
 * conversation, a third with a follow-up in the ledger and a queue row for the recipe, every id provider-shaped — a
 * service that has run a campaign for weeks, whose random-keyed indexes no longer fit SQLite's page cache.
 */
const HISTORY = Number(process.env.BENCH_HISTORY ?? 0)
const agent = new http.Agent({ keepAlive: true, maxSockets: 256 })

async function serveBare(): Promise<void> {
  const { serve } = await import('h3')
  const bare = createBareWebhookApp()
  const s = serve(bare, { port: 0, hostname: '127.0.0.1', silent: true, gracefulShutdown: false })
  await s.ready()
  const a = s.node?.server?.address()
  process.stdout.write(JSON.stringify({ port: typeof a === 'object' && a ? a.port : 0 }) + '\n')
  process.stdin.resume()
  process.stdin.on('end', () => process.exit(0))
}

interface Sent {
  status: number
  ms: number
  headers: http.IncomingHttpHeaders
  body: string
}

function request(port: number, method: string, path: string, body: Buffer | undefined, headers: Record<string, string>, started = performance.now()): Promise<Sent> {
  return new Promise((done, fail) => {
    const req = http.request({ host: '127.0.0.1', port, path, method, agent, headers: { 'content-type': 'application/json', ...(body ? { 'content-length': String(body.length) } : {}), ...headers } }, (res) => {
      let text = ''
      res.on('data', (c: Buffer) => (text += c.toString()))
      res.on('end', () => done({ status: res.statusCode ?? 0, ms: performance.now() - started, headers: res.headers, body: text }))
    })
    req.on('error', (error: NodeJS.ErrnoException) => {
      if (req.reusedSocket && error.code === 'ECONNRESET') request(port, method, path, body, headers, started).then(done, fail)
      else fail(error)
    })
    req.end(body)
  })
}

let seq = 0
async function burstEvents(n: number): Promise<Array<{ body: Buffer; headers: Record<string, string> }>> {
  const { signFormant } = await import('../../src/webhooks/verify.ts')
  const out = []
  const now = new Date().toISOString()
  for (let i = 0; i < n; i++) {
    seq++
    const status = (['completed', 'no_answer', 'busy'] as const)[seq % 3]!
    const phone = `+9190${String(seq).padStart(7, '0')}${status === 'busy' ? 6 : status === 'no_answer' ? 5 : 1}`
    const { eventId: id, conversationId, traceId } = providerIds()
    const body = Buffer.from(JSON.stringify({
      event_id: id, event_type: `call.${status}`, timestamp: now,
      data: {
        call: {
          agent_id: 101, call_parameters: { customer_phone: phone, name: 'Asha' }, conversation_id: conversationId,
          duration_seconds: status === 'completed' ? 42 : null, started_at: now, ended_at: now, failure_reason: status === 'completed' ? null : status,
          from_phone: '+918035550101', to_phone: phone, recording_url: null, status, trace_id: traceId,
        },
        results: status === 'completed' ? { intent: 'pay_later' } : {},
        retry: { attempt_number: 1, is_final_attempt: true, max_attempts: 1, next_retry_at: null },
        retry_context: null,
        transcript: status === 'completed' ? 'BOT: Namaste?\nHUMAN: Yes.' : null,
      },
    }))
    out.push({ body, headers: { 'x-formantai-signature': signFormant(body, SECRET), 'x-formantai-timestamp': String(Math.floor(Date.now() / 1000)), 'x-formantai-event-id': id } })
  }
  return out
}

async function throughput(port: number, events: Array<{ body: Buffer; headers: Record<string, string> }>) {
  let next = 0
  let bad = 0
  const started = performance.now()
  const lane = async () => {
    while (next < events.length) {
      const e = events[next++]!
      if ((await request(port, 'POST', '/webhooks/formant', e.body, e.headers)).status !== 204) bad++
    }
  }
  await Promise.all(Array.from({ length: CONCURRENCY }, lane))
  const seconds = (performance.now() - started) / 1000
  return { rps: events.length / seconds, seconds, bad, started }
}

async function atRate(port: number, events: Array<{ body: Buffer; headers: Record<string, string> }>) {
  const total = Math.min(events.length, Math.floor((RATE * RATE_MS) / 1000))
  const latencies: number[] = []
  const pending: Promise<void>[] = []
  const started = performance.now()
  let sent = 0
  while (sent < total) {
    const due = Math.min(total, Math.floor(((performance.now() - started) * RATE) / 1000) + 1)
    while (sent < due) {
      const e = events[sent++]!
      pending.push(request(port, 'POST', '/webhooks/formant', e.body, e.headers).then((r) => void latencies.push(r.ms)))
    }
    await new Promise((r) => setTimeout(r, 1))
  }
  await Promise.all(pending)
  latencies.sort((a, b) => a - b)
  return { p50: latencies[Math.floor(latencies.length / 2)]!, p99: latencies[Math.floor(latencies.length * 0.99)]! }
}

/** The sum of a metric's series; NaN when it has none (a scrape that missed the processing thread's share). */
async function series(port: number, name: string): Promise<number> {
  const r = await request(port, 'GET', '/metrics', undefined, {})
  let sum = 0
  let found = false
  for (const line of r.body.split('\n')) {
    if (line.startsWith(name + '{') || line.startsWith(name + ' ')) {
      sum += Number(line.split(' ').at(-1))
      found = true
    }
  }
  return found ? sum : NaN
}

/** The sum of a metric's series, 0 when it has none (a counter never incremented, a recipe queue never filled). */
async function gauge(port: number, name: string): Promise<number> {
  const sum = await series(port, name)
  return Number.isNaN(sum) ? 0 : sum
}

/**
 * Nothing left to process: the inbox's pending gauge present and at zero (absent, it proves nothing — under
 * `serve` the processing thread counts it), and no recipe queue left.
 */
async function drainedAt(port: number): Promise<boolean> {
  return (await series(port, 'switchboard_events_pending')) === 0 && (await gauge(port, 'switchboard_recipe_events_queued')) === 0
}

async function until(what: string, check: () => Promise<boolean>, timeoutMs: number, everyMs = 100): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (await check()) return
    await new Promise((r) => setTimeout(r, everyMs))
  }
  throw new Error(`timed out waiting for ${what}`)
}

interface Service {
  port: number
  dataDir: string
  child: ChildProcess
  db(): BetterSqlite3.Database
  stop(): Promise<void>
}

/**
 * The shipped recipes' type verdicts, checked once before anything is measured by `recipes list` (which waits for
 * them) and kept in the installation's verdict file (node_modules/.cache/switchboard/recipe-types.json), where every
 * measured service finds them: a campaign's burst meets a service that has run before, not one whose first start is
 * still type-checking the recipes on a core of its own (about 7 s of CPU on this machine).
 */
async function warmTypeCache(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'sb-bench-pipeline-'))
  try {
    const child = spawn(process.execPath, [join(ROOT, 'src/bin.mjs'), 'recipes', 'list'], {
      cwd: ROOT,
      env: { ...process.env, SWITCHBOARD_CONFIG: 'none', DATA_DIR: dataDir, RECIPES_DIR: process.env.BENCH_RECIPES_DIR ?? join(ROOT, 'recipes'), LOG_LEVEL: 'silent' },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let output = ''
    child.stdout!.on('data', (c: Buffer) => (output += c.toString()))
    child.stderr!.on('data', (c: Buffer) => (output += c.toString()))
    const code = await new Promise<number | null>((done) => child.on('exit', done))
    if (code !== 0 || /type error|could not be type-checked/.test(output)) throw new Error(`recipes list (checking the shipped recipes' types) failed (${code}):\n${output}`)
  } finally {
    rmSync(dataDir, { recursive: true, force: true })
  }
}

async function startService(env: Record<string, string>, options: { history?: number } = {}): Promise<Service> {
  const port = await freePort()
  const dataDir = mkdtempSync(join(tmpdir(), 'sb-bench-pipeline-'))
  if (options.history) await seedHistory(dataDir, options.history)
  const child = spawn(process.execPath, [...(process.env.BENCH_PROF ? ['--cpu-prof', '--cpu-prof-dir=' + process.env.BENCH_PROF] : []), ...(process.env.BENCH_NODE_FLAGS ? process.env.BENCH_NODE_FLAGS.split(' ') : []), join(ROOT, 'src/bin.mjs'), 'serve'], {
    cwd: ROOT,
    // Logging as shipped: LOG_LEVEL's default (info: a line per stored webhook), stdout a pipe that is read,
    // as a terminal, journald or a container's log driver reads it.
    env: { ...process.env, SWITCHBOARD_CONFIG: 'none', PORT: String(port), DATA_DIR: dataDir, WEBHOOK_SECRET: SECRET, RECIPES_DIR: process.env.BENCH_RECIPES_DIR ?? join(ROOT, 'recipes'), LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info', RECONCILE_INTERVAL_SECONDS: '0', ...env },
    stdio: ['ignore', 'pipe', 'ignore'],
  })
  child.stdout!.resume()
  // Measured once the service is fully started: /readyz answers as soon as the listener opens, while the
  // processing thread still loads its modules for a few seconds (start-up has its own budget).
  await until('the service to be ready with processing running', async () => {
    const r = await request(port, 'GET', '/readyz', undefined, {}).catch(() => ({ status: 0, body: '' }))
    return r.status === 200 && (JSON.parse(r.body) as { processing?: string }).processing === 'running'
  }, 30_000).catch((error: unknown) => {
    // Never left running behind a failed benchmark (it would hold a core through every run after it).
    child.kill('SIGKILL')
    rmSync(dataDir, { recursive: true, force: true })
    throw error
  })
  seedDncList(dataDir)
  let handle: BetterSqlite3.Database | undefined
  return {
    port,
    dataDir,
    child,
    db: () => (handle ??= new BetterSqlite3(join(dataDir, 'switchboard.db'), { readonly: true, fileMustExist: true })),
    async stop() {
      handle?.close()
      child.kill('SIGTERM')
      await new Promise((r) => (child.exitCode !== null ? r(null) : child.once('exit', r)))
      rmSync(dataDir, { recursive: true, force: true })
    },
  }
}

/** HISTORY handled events (and their conversations, follow-ups, queue rows) written into a fresh data folder's database. */
async function seedHistory(dataDir: string, n: number): Promise<void> {
  const migrate = spawn(process.execPath, [join(ROOT, 'src/bin.mjs'), 'migrate'], {
    cwd: ROOT,
    env: { ...process.env, SWITCHBOARD_CONFIG: 'none', DATA_DIR: dataDir, LOG_LEVEL: 'silent' },
    stdio: 'ignore',
  })
  const code = await new Promise<number | null>((done) => migrate.on('exit', done))
  if (code !== 0) throw new Error(`migrate exited ${code}`)
  const db = new BetterSqlite3(join(dataDir, 'switchboard.db'), { fileMustExist: true })
  try {
    const tables = ['webhook_events', 'conversations', 'calls', 'recipe_event_fires']
    const indexes = db.prepare(`SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL AND tbl_name IN (${tables.map(() => '?').join(', ')})`).all(...tables) as Array<{ name: string; sql: string }>
    for (const index of indexes) db.exec(`DROP INDEX "${index.name}"`)
    const event = db.prepare(`INSERT INTO webhook_events (event_id, target, event_type, conversation_id, trace_id, agent_id, body, headers, source, received_at, status, attempts, next_attempt_at, claimed_by, claimed_until, last_error, processed_at, duplicates)
      VALUES (?, 'formant', ?, ?, ?, 101, ?, '{}', 'webhook', ?, 'processed', 1, ?, NULL, NULL, NULL, ?, 0)`)
    const conversation = db.prepare(`INSERT INTO conversations (conversation_id, agent_id, contact_number, status, terminal, duration_seconds, started_at, ended_at, failure_reason, trace_id, from_phone, recording_url, transcript, results, call_parameters, retry, retry_context, last_event_at, last_event_id, source, created_at, updated_at)
      VALUES (?, 101, ?, ?, 1, NULL, ?, ?, NULL, ?, '+918035550101', NULL, NULL, '{}', ?, NULL, NULL, ?, ?, 'webhook', ?, ?)`)
    const call = db.prepare(`INSERT INTO calls (id, tenant, agent_id, customer_phone, idempotency_key, trace_id, conversation_id, previous_conversation_id, scheduled_for, parameters, retry_context, metadata, recipe, campaign, status, error, created_at, updated_at)
      VALUES (?, 'bench', 101, ?, ?, ?, ?, ?, NULL, ?, NULL, NULL, 'no-answer-followup', 'agent:101', 'scheduled', NULL, ?, ?)`)
    const fire = db.prepare(`INSERT INTO recipe_event_fires (recipe, event_id, fired_at, status, attempts, next_attempt_at, claimed_by, claimed_until, run_id, last_error) VALUES ('no-answer-followup', ?, ?, 'done', 1, ?, NULL, NULL, NULL, NULL)`)
    const now = Date.now()
    db.transaction(() => {
      for (let i = 0; i < n; i++) {
        const status = (['completed', 'no_answer', 'busy'] as const)[i % 3]!
        // Numbers no call of the benchmark uses (+9180…), received over the last 20 days (inside the retention window).
        const phone = `+9180${String(i).padStart(8, '0')}`
        const at = now - 3_600_000 - Math.floor(((n - i) / n) * 20 * 86_400_000)
        const { eventId, conversationId, traceId } = providerIds()
        const parameters = JSON.stringify({ customer_phone: phone, name: 'Asha' })
        const body = JSON.stringify({ event_id: eventId, event_type: `call.${status}`, timestamp: new Date(at).toISOString(), data: { call: { agent_id: 101, call_parameters: { customer_phone: phone, name: 'Asha' }, conversation_id: conversationId, status, to_phone: phone, from_phone: '+918035550101', trace_id: traceId, started_at: new Date(at).toISOString(), ended_at: new Date(at).toISOString() }, results: {}, transcript: status === 'completed' ? 'BOT: Namaste?\nHUMAN: Yes.' : null } })
        event.run(eventId, `call.${status}`, conversationId, traceId, body, at, at, at + 200)
        conversation.run(conversationId, phone, status, at - 60_000, at, traceId, parameters, at, eventId, at, at + 200)
        if (status !== 'completed') {
          fire.run(eventId, at + 200, at + 200)
          const next = providerIds()
          call.run(`call_${next.eventId}`, phone, `fu_${next.traceId}`, next.traceId, null, conversationId, `[{"name":"customer_phone","value":"${phone}"}]`, at + 300, at + 300)
        }
      }
    })()
    for (const index of indexes) db.exec(index.sql)
  } finally {
    db.close()
  }
}

/** DNC_NUMBERS numbers on the running service's do-not-call list (+9160…: a prefix no call of the benchmark uses). */
function seedDncList(dataDir: string): void {
  if (DNC_NUMBERS <= 0) return
  const db = new BetterSqlite3(join(dataDir, 'switchboard.db'), { fileMustExist: true })
  try {
    db.pragma('busy_timeout = 5000')
    const insert = db.prepare('insert or ignore into dnc (phone, reason, source, added_at) values (?, ?, ?, ?)')
    db.transaction(() => {
      for (let i = 0; i < DNC_NUMBERS; i++) insert.run(`+9160${String(i).padStart(8, '0')}`, 'opted out', 'import', 0)
    })()
  } finally {
    db.close()
  }
}

/** Places calls through the proxy to distinct numbers ending in 5 (a 429 is waited out, as a client should). */
async function placeCalls(port: number, n: number, prefix: string): Promise<void> {
  let next = 0
  const lane = async () => {
    while (next < n) {
      const i = next++
      const body = Buffer.from(JSON.stringify({ agent_id: 101, parameters: [{ name: 'customer_phone', value: `+91${prefix}${String(i).padStart(8, '0')}5` }] }))
      for (let attempt = 0; attempt < 100; attempt++) {
        const r = await request(port, 'POST', '/v1/call', body, { authorization: 'Bearer sk_test_acme' })
        if (r.status === 200) break
        if (r.status !== 429) throw new Error(`placing a call: ${r.status} ${r.body}`)
        await new Promise((res) => setTimeout(res, Number(r.headers['retry-after'] ?? 1) * 1000))
      }
    }
  }
  await Promise.all(Array.from({ length: 32 }, lane))
}

/** CPU time (ms) of each of a process's threads, from /proc (Linux); undefined elsewhere. */
function threadCpuMs(pid: number): Map<string, number> | undefined {
  if (!existsSync(`/proc/${pid}/task`)) return undefined
  const ticks = new Map<string, number>()
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8')
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      // utime and stime, in clock ticks of 10 ms.
      ticks.set(tid, (Number(fields[11]) + Number(fields[12])) * 10)
    } catch {
      // The thread ended meanwhile.
    }
  }
  return ticks
}

/**
 * Starts counting where the cores go from now: the returned function gives what was spent since — the service's
 * main thread (the receiver), its other threads (the inbox writer, processing, V8's compiler and GC helpers) and
 * the load generator (this process).
 */
function cpuSince(pid: number) {
  const before = threadCpuMs(pid)
  const loadBefore = process.cpuUsage()
  return () => cpuDuring(pid, before, process.cpuUsage(loadBefore))
}

function cpuDuring(pid: number, before: Map<string, number> | undefined, load: NodeJS.CpuUsage) {
  const after = threadCpuMs(pid)
  if (!before || !after) return undefined
  const spent = [...after].map(([tid, ms]) => [tid, ms - (before.get(tid) ?? 0)] as const)
  const main = spent.find(([tid]) => tid === String(pid))?.[1] ?? 0
  const service = spent.reduce((n, [, ms]) => n + ms, 0)
  const others = spent.filter(([tid, ms]) => tid !== String(pid) && ms > 0).map(([, ms]) => ms).sort((a, b) => b - a)
  const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`
  return { service: s(service), main: s(main), others: others.slice(0, 4).map(s).join(', ') + (others.length > 4 ? ', …' : ''), load: s((load.user + load.system) / 1000) }
}

type Cpu = ReturnType<typeof cpuDuring>
type Burst = Awaited<ReturnType<typeof throughput>>

interface Round {
  ingest: Burst
  ingestRatio: number
  cpu: Cpu
  commits: { rows: number; n: number }
  heldSeconds: number
  lat: { p50: number; p99: number }
  rateCpu: Cpu
  e2eIngest: Burst
  e2eSeconds: number
  e2eRatio: number
  e2eBurstCpu: Cpu
  drainCpu: Cpu
  bare: number
  bareAfter: Burst
  bareLat: { p50: number; p99: number }
}

/**
 * One round of steps 1 and 2 on a running service: a burst (ingest while processing), the paced seconds while its
 * backlog drains, then a second burst timed to its last event processed (end to end), then the bare handler again.
 * The round's ratios use the mean of the bare burst before it and the one after it: on a shared machine one
 * burst's figure moves by a third from minute to minute.
 */
async function measureRound(svc: Service, barePort: number, bareBefore: number): Promise<Round> {
  const burst = await burstEvents(BURST)
  const during = await burstEvents(RATE * (RATE_MS / 1000))
  const commitsBefore = { rows: await gauge(svc.port, 'switchboard_webhook_commit_batch_size_sum'), n: await gauge(svc.port, 'switchboard_webhook_commit_batch_size_count') }
  const heldBefore = await gauge(svc.port, 'switchboard_processing_held_seconds_total')
  const burstSpent = cpuSince(svc.child.pid!)
  const ingest = await throughput(svc.port, burst)
  const cpu = burstSpent()
  const commits = {
    rows: (await gauge(svc.port, 'switchboard_webhook_commit_batch_size_sum')) - commitsBefore.rows,
    n: (await gauge(svc.port, 'switchboard_webhook_commit_batch_size_count')) - commitsBefore.n,
  }
  const rateSpent = cpuSince(svc.child.pid!)
  const lat = await atRate(svc.port, during)
  const rateCpu = rateSpent()
  // Processing's holds for the burst (ended by now: the paced rate is below the gate's threshold).
  const heldSeconds = (await gauge(svc.port, 'switchboard_processing_held_seconds_total')) - heldBefore
  const drained = () => drainedAt(svc.port)
  await until('the backlog to drain', drained, 300_000, 50)
  // End to end on its own burst, from its first event sent to the last one processed: timed over the paced
  // seconds too it would count them, capping the figure at (burst + paced events) / (burst time + paced time)
  // whatever processing managed (0.2× bare on a fast host).
  const e2eBurst = await burstEvents(BURST)
  const e2eBurstSpent = cpuSince(svc.child.pid!)
  const e2eIngest = await throughput(svc.port, e2eBurst)
  const e2eBurstCpu = e2eBurstSpent()
  const drainSpent = cpuSince(svc.child.pid!)
  await until('the end-to-end burst to drain', drained, 300_000, 20)
  const e2eSeconds = (performance.now() - e2eIngest.started) / 1000
  const drainCpu = drainSpent()
  // The bare handler again, now the service is idle.
  const bareAfter = await throughput(barePort, await burstEvents(BURST))
  const bare = (bareBefore + bareAfter.rps) / 2
  // The host's own tail at the paced rate, in the same minute: what a bare handler answers at 1,000/s (no backlog,
  // no database) bounds what the service can.
  const bareLat = await atRate(barePort, await burstEvents(RATE * (RATE_MS / 1000)))
  return {
    ingest, ingestRatio: ingest.rps / bare, cpu, commits, heldSeconds, lat, rateCpu,
    e2eIngest, e2eSeconds, e2eRatio: e2eBurst.length / e2eSeconds / bare, e2eBurstCpu, drainCpu, bare, bareAfter, bareLat,
  }
}

function printRound(n: number, r: Round, bareCpu: Cpu): void {
  const e2e = BURST / r.e2eSeconds
  console.log(`round ${n}: bare h3 ${r.bare.toFixed(0)} req/s (mean of the bursts before and after the round)`)
  console.log(`   ingest while processing: ${r.ingest.rps.toFixed(0)} events/s → ${r.ingestRatio.toFixed(2)}× bare${r.ingest.bad ? ` · ${r.ingest.bad} non-204` : ''}`)
  if (r.cpu) console.log(`   CPU during the burst (${r.ingest.seconds.toFixed(2)} s on ${cpus().length} cores): service ${r.cpu.service} (main thread ${r.cpu.main}; other threads ${r.cpu.others}), load generator ${r.cpu.load}`)
  if (bareCpu) console.log(`   CPU during the bare handler's first burst: bare handler ${bareCpu.service} (main thread ${bareCpu.main}), load generator ${bareCpu.load}`)
  console.log(`   group commits during the burst: ${r.commits.n} of ${(r.commits.rows / Math.max(1, r.commits.n)).toFixed(1)} deliveries on average; processing held back ${r.heldSeconds.toFixed(2)} s for it`)
  console.log(`   at ${RATE}/s while the backlog drains: p50 ${r.lat.p50.toFixed(2)} ms, p99 ${r.lat.p99.toFixed(2)} ms (the bare handler at ${RATE}/s after the round: p50 ${r.bareLat.p50.toFixed(2)} ms, p99 ${r.bareLat.p99.toFixed(2)} ms)`)
  if (r.rateCpu) console.log(`   CPU over those ${RATE_MS / 1000} s: service ${r.rateCpu.service} (main thread ${r.rateCpu.main}; other threads ${r.rateCpu.others}), load generator ${r.rateCpu.load}`)
  console.log(`   end to end: ${BURST} events fully processed in ${r.e2eSeconds.toFixed(1)} s = ${e2e.toFixed(0)}/s → ${r.e2eRatio.toFixed(2)}× bare${r.e2eIngest.bad ? ` · ${r.e2eIngest.bad} non-204` : ''}`)
  if (r.e2eBurstCpu && r.drainCpu) console.log(`   the burst ${r.e2eIngest.seconds.toFixed(2)} s: service ${r.e2eBurstCpu.service} (main thread ${r.e2eBurstCpu.main}; other threads ${r.e2eBurstCpu.others}); the drain after it ${(r.e2eSeconds - r.e2eIngest.seconds).toFixed(2)} s: service ${r.drainCpu.service} (main thread ${r.drainCpu.main}; other threads ${r.drainCpu.others})`)
}

const verdict = (ok: boolean) => (ok ? 'pass ✓' : 'FAIL ✗')

async function main(): Promise<void> {
  const bare = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), '--bare'], { stdio: ['pipe', 'pipe', 'inherit'] })
  const barePort = await new Promise<number>((done, fail) => {
    let buffer = ''
    bare.stdout!.on('data', (c: Buffer) => {
      buffer += c.toString()
      if (buffer.includes('\n')) done((JSON.parse(buffer.split('\n')[0]!) as { port: number }).port)
    })
    bare.on('exit', (code) => fail(new Error(`bare server exited (${code})`)))
  })
  const barePid = bare.pid!
  let failed = false
  const services: Service[] = []
  try {
    await warmTypeCache()
    // ── 1 + 2: the burst, in ROUNDS rounds ───────────────────────────────────────────────────
    await throughput(barePort, await burstEvents(WARMUP))
    const bareEvents = await burstEvents(BURST)
    const bareSpent = cpuSince(barePid)
    let bareBefore = await throughput(barePort, bareEvents)
    const bareCpu = bareSpent()
    const svc = await startService({}, { history: HISTORY })
    services.push(svc)
    // Warmed like the bare handler: a service that has run takes the campaign's burst with its hot code
    // already compiled (a fresh one spends the first seconds compiling on V8's background threads).
    await throughput(svc.port, await burstEvents(WARMUP))
    await until('the warm-up to drain', () => drainedAt(svc.port), 60_000, 50)
    const rounds: Round[] = []
    for (let r = 1; r <= ROUNDS; r++) {
      const round = await measureRound(svc, barePort, bareBefore.rps)
      rounds.push(round)
      bareBefore = round.bareAfter
      printRound(r, round, r === 1 ? bareCpu : undefined)
    }
    const best = {
      ingest: Math.max(...rounds.map((r) => r.ingestRatio)),
      p99: Math.min(...rounds.map((r) => r.lat.p99)),
      e2e: Math.max(...rounds.map((r) => r.e2eRatio)),
    }
    const of = ROUNDS > 1 ? ` (best of ${ROUNDS} rounds)` : ''
    console.log(`1. ingest while processing${of}: ${best.ingest.toFixed(2)}× bare (budget ≥ 0.60) ${verdict(best.ingest >= 0.6)}`)
    console.log(`   at ${RATE}/s while the backlog drains${of}: p99 ${best.p99.toFixed(2)} ms (budget ≤ 20 ms) ${verdict(best.p99 <= 20)}`)
    console.log(`2. end to end${of}: ${best.e2e.toFixed(2)}× bare (budget ≥ 0.25) ${verdict(best.e2e >= 0.25)}`)
    const bad = rounds.reduce((n, r) => n + r.ingest.bad + r.e2eIngest.bad, 0)
    if (bad > 0) console.log(`   ${bad} deliveries answered other than 204 FAIL ✗`)
    failed ||= best.ingest < 0.6 || best.p99 > 20 || best.e2e < 0.25 || bad > 0
    await svc.stop()
    services.pop()

    // ── 3: the real flow ─────────────────────────────────────────────────────────────────────
    const flow = await startService({ SANDBOX_FAULTS: 'latency_ms=100', SANDBOX_RATE_LIMIT: '1000000', SANDBOX_MAX_CALLS: '1000000', SANDBOX_NUMBER_LIMIT: '100', SANDBOX_SPEED: '6000' })
    services.push(flow)
    await placeCalls(flow.port, FLOW_CALLS, '7')
    const followUps = () => flow.db().prepare(`select count(*) n, sum(status in ('failed','rejected')) failed, count(distinct customer_phone) phones, max(updated_at) last from calls where recipe = 'no-answer-followup' and status in ('scheduled','initiated','failed','rejected')`).get() as { n: number; failed: number; phones: number; last: number }
    await until(`${FLOW_CALLS} follow-ups`, async () => followUps().n >= FLOW_CALLS, 600_000, 200)
    const f = followUps()
    const lastNoAnswer = (flow.db().prepare(`select max(received_at) t from webhook_events where event_type = 'call.no_answer'`).get() as { t: number }).t
    const lag = (f.last - lastNoAnswer) / 1000
    const dupes = f.n - f.phones
    console.log(`3. real flow: ${FLOW_CALLS} calls → ${f.n} follow-ups scheduled; last ${lag.toFixed(1)} s after the last no_answer (budget ≤ 10 s) ${verdict(lag <= 10)}; duplicates ${dupes}, failed ${f.failed ?? 0} ${verdict(dupes === 0 && !f.failed)}`)
    failed ||= lag > 10 || dupes > 0 || Boolean(f.failed)
    await flow.stop()
    services.pop()

    // ── 4: default limits ────────────────────────────────────────────────────────────────────
    const limited = await startService({ SANDBOX_SPEED: '6000', SANDBOX_NUMBER_LIMIT: '100' })
    services.push(limited)
    await placeCalls(limited.port, LIMITS_CALLS, '8')
    const l = () => limited.db().prepare(`select sum(status in ('scheduled','initiated')) ok, sum(status in ('failed','rejected')) failed from calls where recipe = 'no-answer-followup'`).get() as { ok: number; failed: number }
    await until(`${LIMITS_CALLS} follow-ups at default limits`, async () => (l().ok ?? 0) + (l().failed ?? 0) >= LIMITS_CALLS, 600_000, 500)
    const retried = await gauge(limited.port, 'switchboard_calls_retried_total')
    console.log(`4. default limits (600/min, 10 concurrent): ${LIMITS_CALLS} calls + follow-ups → ${l().ok} follow-ups accepted, ${l().failed ?? 0} failed, ${retried} waited on a 429 ${verdict(!l().failed)}`)
    failed ||= Boolean(l().failed)
  } finally {
    for (const s of services) await s.stop().catch(() => {})
    bare.stdin!.end()
    agent.destroy()
  }
  process.exit(failed ? 1 : 0)
}

if (process.argv[2] === '--bare') await serveBare()
else await main()
