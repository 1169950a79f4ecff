/**
 * Dashboard benchmark (issue 11): 1,000,000 stored webhook events, 1,000,000 kept deliveries to two destinations
 * (one of them down for the last three days, ~50,000 of its deliveries waiting), 300,000 calls placed, 300,000
 * events queued for a recipe and 100,000 runs of it, and a month of nightly batches over 100,000 contacts in a real SQLite file, then the dashboard's pages served in-process through the app
 * (`app.fetch`, bearer token) — server time, no browser. Budgets: each page ≤ 150 ms (the events page's first page and
 * its searches, Destinations, Calls, Recipes, a nightly batch's run and the admin API's list of them, Mail), the overview ≤ 300 ms (median of several requests after a
 * warm-up). Baseline, measured in the same run: /healthz.
 *
 * DATABASE_URL=postgres://… runs the same pages on Postgres (README → Running on Postgres), in a schema of their own
 * inside that database, dropped at the end.
 */
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { encodePlan } from '../../src/recipes/kept-plan.ts'
import { loadConfig } from '../../src/config/load.ts'
import { createRuntime } from '../../src/runtime.ts'
import { createApp } from '../../src/server.ts'
import { createManualClock } from '../../src/utils/clock.ts'
import { createSilentLogger } from '../../src/utils/logger.ts'
import { createSeededRandom } from '../../src/utils/random.ts'
import type { Runtime } from '../../src/runtime.ts'
import pg from 'pg'

const N = Number(process.env.BENCH_DASHBOARD_EVENTS ?? 1_000_000)
const DELIVERIES = Number(process.env.BENCH_DASHBOARD_DELIVERIES ?? 1_000_000)
/** A month of calls placed (follow-ups and batches, ~10,000 a day) and of events queued for a recipe (2 % dead after an outage). */
const CALLS = Number(process.env.BENCH_DASHBOARD_CALLS ?? 300_000)
const FIRES = Number(process.env.BENCH_DASHBOARD_FIRES ?? 300_000)
/** The recipe's runs over that month: one per event batch (~3,300 a day), each naming its batch's first event. */
const RUNS = Number(process.env.BENCH_DASHBOARD_RUNS ?? 100_000)
const RECIPE = 'no-answer-followup'
/** A run's summary as the shipped follow-up recipe records it for a batch: counts and its calls (~1.5 KB). */
const RUN_SUMMARY = JSON.stringify({
  planned: 0, queued: 9, placed: 0, duplicates: 0, blocked: 0, rejected: 0, failed: 0, skipped: 3, optOuts: 0,
  calls: Array.from({ length: 9 }, (_, i) => ({ status: 'queued', phone: `+91980000000${i}`, scheduled_for: '2026-11-30T10:00:00.000Z', idempotency_key: `fu_${i}_2` })),
})
/**
 * The shipped nightly batch's runs over that month: one a night launching a batch over 100,000 contacts (the rest of its
 * hourly runs find no file and record no plan). Its record keeps the plan as the service writes it (kept-plan.ts).
 */
const NIGHTLY = 'nightly-batch'
const NIGHTLY_RUNS = 30
const NIGHTLY_CONTACTS = 100_000
const NIGHTLY_PLAN = encodePlan([{
  kind: 'batch', agent_id: 101, name: 'contacts', rejects: [],
  rows: Array.from({ length: NIGHTLY_CONTACTS }, (_, i) => ({ customer_phone: `+1415${String(5_000_000 + i).padStart(7, '0')}`, first_name: `Name ${i}`, timezone: 'America/Los_Angeles', campaign: 'contacts' })),
}])!
const NIGHTLY_SUMMARY = JSON.stringify({ files: 1, launched: 1, rows: NIGHTLY_CONTACTS, rejects: 0, waiting: 0 })
const DESTINATION_NAMES = ['crm', 'warehouse']
const WAREHOUSE_DOWN_MS = 3 * 86_400_000
const NOW = Date.parse('2026-11-21T06:00:00Z')
const SPAN_MS = 30 * 86_400_000
const TOKEN = 'bench-dashboard-token-0123456789'
const TYPES = ['call.completed', 'call.completed', 'call.completed', 'call.no_answer', 'call.busy', 'call.failed', 'call.initiated', 'call.ringing', 'call.in_progress']
const STATUSES = [...Array(90).fill('processed'), ...Array(5).fill('failed'), ...Array(3).fill('dead'), ...Array(2).fill('pending')] as string[]
const REPEATS = 9

const POSTGRES_URL = process.env.DATABASE_URL?.startsWith('postgres') ? process.env.DATABASE_URL : undefined
const PG_SCHEMA = `sb_bench_dashboard_${process.pid}`
const dir = mkdtempSync(join(tmpdir(), 'sb-bench-dashboard-'))
// The shipped nightly batch alone (its runs are seeded): the dashboard's pages are measured, not recipes.
mkdirSync(join(dir, 'recipes'))
copyFileSync(fileURLToPath(new URL(`../../recipes/${NIGHTLY}.ts`, import.meta.url)), join(dir, 'recipes', `${NIGHTLY}.ts`))
let failed = false
if (POSTGRES_URL) await postgresAdmin((c) => c.query(`CREATE SCHEMA ${PG_SCHEMA}`))
try {
  const databaseUrl = POSTGRES_URL ? `${POSTGRES_URL}${POSTGRES_URL.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${PG_SCHEMA}`)}` : `sqlite:${join(dir, 'bench.db')}`
  const rt = await createRuntime(
    loadConfig({
      env: {
        DATA_DIR: dir, DATABASE_URL: databaseUrl, WEBHOOK_SECRET: 'whsec_bench', ADMIN_TOKEN: TOKEN, RECIPES_DIR: join(dir, 'recipes'), RECIPES_TYPECHECK: 'false', LOG_LEVEL: 'silent',
        // Destinations are only read here (no delivery worker runs): their deliveries are seeded below.
        ALLOW_PRIVATE_DESTINATIONS: '1',
        DESTINATIONS: JSON.stringify(DESTINATION_NAMES.map((name) => ({ name, url: 'http://127.0.0.1:9/hooks', secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', allowHttp: true }))),
      },
    }),
    { clock: createManualClock(NOW), random: createSeededRandom(11), log: createSilentLogger() },
  )
  const seedStart = performance.now()
  if (POSTGRES_URL) await seedPostgres(rt)
  else seedSqlite(rt)
  const seedMs = performance.now() - seedStart
  console.log(`seeded ${N.toLocaleString('en-US')} events, ${DELIVERIES.toLocaleString('en-US')} deliveries, ${CALLS.toLocaleString('en-US')} calls, ${FIRES.toLocaleString('en-US')} recipe queue rows and ${RUNS.toLocaleString('en-US')} runs in ${(seedMs / 1000).toFixed(1)} s`)

  const app = createApp(rt)
  const get = async (path: string): Promise<number> => {
    const start = performance.now()
    const res = await app.fetch(new Request(`http://127.0.0.1${path}`, { headers: { authorization: `Bearer ${TOKEN}` } }))
    await res.text()
    const ms = performance.now() - start
    if (res.status !== 200) throw new Error(`${path} answered ${res.status}`)
    return ms
  }
  const measure = async (path: string) => {
    await get(path) // warm: JIT, SQLite pages
    const times: number[] = []
    for (let i = 0; i < REPEATS; i++) times.push(await get(path))
    times.sort((a, b) => a - b)
    return { median: times[Math.floor(times.length / 2)]!, max: times[times.length - 1]! }
  }

  const baseline = await measure('/healthz')
  const deep = `/ui/events?after=${Buffer.from(`${NOW - 20 * 86_400_000}:evt_0500000`).toString('base64url')}`
  const cases: Array<{ name: string; path: string; budget: number }> = [
    { name: 'events, first page', path: '/ui/events', budget: 150 },
    { name: 'events, filtered (status=failed, type=call.busy)', path: '/ui/events?status=failed&type=call.busy', budget: 150 },
    { name: 'events, filtered (date range + status=dead)', path: '/ui/events?status=dead&from=2026-11-01&to=2026-11-03', budget: 150 },
    { name: 'events, by trace id', path: '/ui/events?trace_id=tr_123456', budget: 150 },
    { name: 'events, a page deep in the keyset', path: deep, budget: 150 },
    { name: `destinations (${DELIVERIES.toLocaleString('en-US')} deliveries kept)`, path: '/ui/destinations', budget: 150 },
    { name: 'destinations, the dead letters of one', path: '/ui/destinations?destination=crm&status=dead', budget: 150 },
    { name: `calls (${CALLS.toLocaleString('en-US')} placed)`, path: '/ui/calls', budget: 150 },
    { name: 'calls, filtered (status=failed)', path: '/ui/calls?status=failed', budget: 150 },
    { name: 'calls, by phone', path: '/ui/calls?phone=%2B919800012345', budget: 150 },
    { name: `recipes (${FIRES.toLocaleString('en-US')} events queued for one, 2 % dead)`, path: '/ui/recipes', budget: 150 },
    { name: `an event's page (its queue rows and runs among ${FIRES.toLocaleString('en-US')} and ${RUNS.toLocaleString('en-US')})`, path: '/ui/events/evt_0123456', budget: 150 },
    { name: `a nightly batch's run (${NIGHTLY_CONTACTS.toLocaleString('en-US')} contacts)`, path: `/ui/recipes/${NIGHTLY}/runs/nightly_${NIGHTLY_RUNS - 1}`, budget: 150 },
    { name: `the nightly batch's runs over the admin API (${NIGHTLY_RUNS} of ${NIGHTLY_CONTACTS.toLocaleString('en-US')} contacts)`, path: `/admin/recipes/${NIGHTLY}/runs?limit=50`, budget: 150 },
    { name: 'mail', path: '/ui/mail', budget: 150 },
    { name: 'overview', path: '/ui', budget: 300 },
  ]
  console.log(`baseline /healthz: median ${baseline.median.toFixed(2)} ms`)
  for (const c of cases) {
    const r = await measure(c.path)
    const ok = r.median <= c.budget
    if (!ok) failed = true
    console.log(`${c.name}: median ${r.median.toFixed(1)} ms, max ${r.max.toFixed(1)} ms (budget ≤ ${c.budget} ms) ${ok ? '✓' : '✗'}`)
  }
  await rt.close()
} finally {
  rmSync(dir, { recursive: true, force: true })
  if (POSTGRES_URL) await postgresAdmin((c) => c.query(`DROP SCHEMA IF EXISTS ${PG_SCHEMA} CASCADE`))
}
if (failed) process.exit(1)

/** Bulk insert: one transaction, one prepared statement, no fsync per row, and the secondary indexes
 * built once afterwards (a sorted build) instead of updated row by row. */
function seedSqlite(rt: Runtime): void {
  const sqlite = rt.store.sqlite!
  const random = createSeededRandom(3)
  sqlite.pragma('synchronous = OFF')
  sqlite.pragma('cache_size = -200000')
  const indexes = sqlite.prepare(`SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'webhook_events' AND sql IS NOT NULL`).all() as Array<{ name: string; sql: string }>
  for (const index of indexes) sqlite.exec(`DROP INDEX "${index.name}"`)
  const insert = sqlite.prepare(`INSERT INTO webhook_events (event_id, target, event_type, conversation_id, trace_id, agent_id, body, headers, source, received_at, status, attempts, next_attempt_at, claimed_by, claimed_until, last_error, processed_at, duplicates)
    VALUES (?, 'formant', ?, ?, ?, 101, ?, '{}', 'webhook', ?, ?, ?, ?, NULL, NULL, ?, ?, 0)`)
  sqlite.transaction(() => {
    for (let i = 0; i < N; i++) {
      const type = TYPES[i % TYPES.length]!
      const status = STATUSES[Math.floor(random.next() * STATUSES.length)]!
      const at = NOW - Math.floor(random.next() * SPAN_MS)
      const conv = `conv_${Math.floor(i / 3)}`
      const trace = `tr_${Math.floor(i / 3)}`
      const body = `{"event_id":"evt_${i}","event_type":"${type}","data":{"call":{"conversation_id":"${conv}","trace_id":"${trace}","to_phone":"+9198${String(i % 1e8).padStart(8, '0')}"}}}`
      insert.run(`evt_${String(i).padStart(7, '0')}`, type, conv, trace, body, at, status, status === 'processed' ? 1 : 3, at, status === 'processed' ? null : 'hook "x" failed', status === 'processed' ? at : null)
    }
  })()
  for (const index of indexes) sqlite.exec(index.sql)
  // A month of forwarding, kept: mostly delivered, 1 % dead letters, a small backlog pending — and the warehouse
  // down for the last three days, its deliveries since then all waiting (~50,000, the newest rows of its outbox).
  const deliveryIndexes = sqlite.prepare(`SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'destination_deliveries' AND sql IS NOT NULL`).all() as Array<{ name: string; sql: string }>
  for (const index of deliveryIndexes) sqlite.exec(`DROP INDEX "${index.name}"`)
  const delivery = sqlite.prepare(`INSERT INTO destination_deliveries (id, destination, event_id, event_type, conversation_id, payload, order_at, ordered, status, attempts, round_attempts, next_attempt_at, claimed_by, claimed_until, last_status, last_error, created_at, delivered_at)
    VALUES (?, ?, ?, 'call.completed', ?, '', ?, 0, ?, ?, ?, ?, NULL, NULL, ?, ?, ?, ?)`)
  sqlite.transaction(() => {
    for (let i = 0; i < DELIVERIES; i++) {
      const r = random.next()
      const at = NOW - Math.floor(random.next() * SPAN_MS)
      const down = DESTINATION_NAMES[i % DESTINATION_NAMES.length] === 'warehouse' && at > NOW - WAREHOUSE_DOWN_MS
      const status = down ? 'pending' : r < 0.01 ? 'dead' : r < 0.015 ? 'pending' : 'delivered'
      const attempts = status === 'dead' ? 10 : status === 'pending' ? 2 : 1
      delivery.run(`msg_${String(i).padStart(8, '0')}`, DESTINATION_NAMES[i % DESTINATION_NAMES.length], `evt_${String(i >> 1).padStart(7, '0')}`, `conv_${i >> 3}`, at * 1000, status, attempts, attempts, at + 60_000,
        status === 'delivered' ? 200 : 503, status === 'delivered' ? null : 'answered 503', at, status === 'delivered' ? at + 40 : null)
    }
  })()
  for (const index of deliveryIndexes) sqlite.exec(index.sql)
  const call = sqlite.prepare(`INSERT INTO calls (id, tenant, agent_id, customer_phone, idempotency_key, trace_id, conversation_id, previous_conversation_id, scheduled_for, parameters, retry_context, metadata, recipe, campaign, status, error, created_at, updated_at)
    VALUES (?, 'bench', 101, ?, ?, ?, ?, ?, NULL, ?, ?, NULL, ?, ?, ?, ?, ?, ?)`)
  const fire = sqlite.prepare(`INSERT INTO recipe_event_fires (recipe, event_id, fired_at, status, attempts, next_attempt_at, claimed_by, claimed_until, run_id, last_error) VALUES (?, ?, ?, ?, ?, ?, NULL, NULL, NULL, ?)`)
  sqlite.transaction(() => {
    for (let i = 0; i < CALLS; i++) {
      const r = random.next()
      const at = NOW - Math.floor(random.next() * SPAN_MS)
      const status = r < 0.9 ? 'initiated' : r < 0.95 ? 'scheduled' : r < 0.98 ? 'failed' : 'rejected'
      const phone = `+9198${String(i % 1e8).padStart(8, '0')}`
      const recipe = i % 10 < 7 ? RECIPE : null
      call.run(`call_${String(i).padStart(7, '0')}`, phone, `idem_${i}`, `ctr_${i}`, status === 'initiated' ? `conv_call_${i}` : null, recipe && i > 0 ? `conv_call_${i - 1}` : null,
        `[{"name":"customer_phone","value":"${phone}"}]`, recipe ? '{"attempt":2}' : null, recipe, i % 3 === 0 ? 'spring' : null, status, status === 'failed' ? 'upstream answered 500' : null, at, at)
    }
    for (let i = 0; i < FIRES; i++) {
      const r = random.next()
      const at = NOW - Math.floor(random.next() * SPAN_MS)
      const status = r < 0.97 ? 'done' : r < 0.99 ? 'dead' : 'pending'
      fire.run(RECIPE, `evt_${String(i).padStart(7, '0')}`, at, status, status === 'dead' ? 3 : status === 'done' ? 1 : 0, at, status === 'dead' ? 'call failed' : null)
    }
    const run = sqlite.prepare(`INSERT INTO recipe_runs (id, recipe, trigger, event_id, dry_run, status, started_at, ended_at, summary, plan, error, process) VALUES (?, ?, 'event', ?, 0, 'succeeded', ?, ?, ?, NULL, NULL, NULL)`)
    for (let i = 0; i < RUNS; i++) {
      const at = NOW - Math.floor(((RUNS - i) / RUNS) * SPAN_MS)
      run.run(`run_${String(i).padStart(7, '0')}`, RECIPE, `evt_${String(i * 3).padStart(7, '0')}`, at, at + 800, RUN_SUMMARY)
    }
    const nightly = sqlite.prepare(`INSERT INTO recipe_runs (id, recipe, trigger, event_id, dry_run, status, started_at, ended_at, summary, plan, error, process) VALUES (?, ?, 'cron', NULL, 0, 'succeeded', ?, ?, ?, ?, NULL, NULL)`)
    for (let i = 0; i < NIGHTLY_RUNS; i++) {
      const at = NOW - (NIGHTLY_RUNS - i) * 86_400_000
      nightly.run(`nightly_${i}`, NIGHTLY, at, at + 9_000, NIGHTLY_SUMMARY, NIGHTLY_PLAN)
    }
  })()
  sqlite.pragma('synchronous = NORMAL')
  // No ANALYZE: the service never runs it on SQLite, so a user's database has no statistics and SQLite plans every
  // page's statements without them. Measured with them, the pages were measured under plans no user gets.
  if (process.env.BENCH_DASHBOARD_ANALYZE === '1') sqlite.exec('ANALYZE')
}

/**
 * The same month on Postgres, generated by the server itself (generate_series; random() seeded, so every run
 * seeds the same rows): the same shares of types and statuses, the warehouse down for the last three days.
 * Secondary indexes are dropped first and built once afterwards, as on SQLite.
 */
async function seedPostgres(rt: Runtime): Promise<void> {
  await postgresAdmin(async (c) => {
    await c.query(`SET search_path = ${PG_SCHEMA}`)
    await c.query(`SET maintenance_work_mem = '256MB'`)
    const dropIndexes = async (table: string): Promise<string[]> => {
      const { rows } = await c.query<{ name: string; def: string }>(
        `SELECT i.relname AS name, pg_get_indexdef(i.oid) AS def FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
         WHERE x.indrelid = $1::regclass AND NOT x.indisprimary`, [`${PG_SCHEMA}.${table}`])
      for (const r of rows) await c.query(`DROP INDEX ${PG_SCHEMA}."${r.name}"`)
      return rows.map((r) => r.def)
    }
    const types = `ARRAY[${TYPES.map((t) => `'${t}'`).join(',')}]`
    const eventIndexes = await dropIndexes('webhook_events')
    await c.query(`SELECT setseed(0.3)`)
    await c.query(`
      INSERT INTO webhook_events (event_id, target, event_type, conversation_id, trace_id, agent_id, body, headers, source, received_at, status, attempts, next_attempt_at, claimed_by, claimed_until, last_error, processed_at, duplicates)
      SELECT 'evt_' || lpad(i::text, 7, '0'), 'formant', type, 'conv_' || (i / 3), 'tr_' || (i / 3), 101,
             '{"event_id":"evt_' || i || '","event_type":"' || type || '","data":{"call":{"conversation_id":"conv_' || (i / 3) || '","trace_id":"tr_' || (i / 3) || '","to_phone":"+9198' || lpad((i % 100000000)::text, 8, '0') || '"}}}',
             '{}', 'webhook', at, status, CASE WHEN status = 'processed' THEN 1 ELSE 3 END, at, NULL, NULL,
             CASE WHEN status = 'processed' THEN NULL ELSE 'hook "x" failed' END, CASE WHEN status = 'processed' THEN at END, 0
      FROM (SELECT i, (${types})[i % ${TYPES.length} + 1] AS type, ${NOW} - floor(random() * ${SPAN_MS})::bigint AS at,
                   CASE WHEN r < 0.90 THEN 'processed' WHEN r < 0.95 THEN 'failed' WHEN r < 0.98 THEN 'dead' ELSE 'pending' END AS status
            FROM (SELECT i, random() AS r FROM generate_series(0, ${N - 1}) AS i) g) e`)
    for (const def of eventIndexes) await c.query(def)
    const deliveryIndexes = await dropIndexes('destination_deliveries')
    const names = `ARRAY[${DESTINATION_NAMES.map((n) => `'${n}'`).join(',')}]`
    await c.query(`
      INSERT INTO destination_deliveries (id, destination, event_id, event_type, conversation_id, payload, order_at, ordered, status, attempts, round_attempts, next_attempt_at, claimed_by, claimed_until, last_status, last_error, created_at, delivered_at)
      SELECT 'msg_' || lpad(i::text, 8, '0'), destination, 'evt_' || lpad((i >> 1)::text, 7, '0'), 'call.completed', 'conv_' || (i >> 3), '', at * 1000, 0,
             status, attempts, attempts, at + 60000, NULL, NULL, CASE WHEN status = 'delivered' THEN 200 ELSE 503 END,
             CASE WHEN status = 'delivered' THEN NULL ELSE 'answered 503' END, at, CASE WHEN status = 'delivered' THEN at + 40 END
      FROM (SELECT i, destination, at, status, CASE status WHEN 'dead' THEN 10 WHEN 'pending' THEN 2 ELSE 1 END AS attempts
            FROM (SELECT i, destination, at,
                         CASE WHEN destination = 'warehouse' AND at > ${NOW - WAREHOUSE_DOWN_MS} THEN 'pending' WHEN r < 0.01 THEN 'dead' WHEN r < 0.015 THEN 'pending' ELSE 'delivered' END AS status
                  FROM (SELECT i, (${names})[i % ${DESTINATION_NAMES.length} + 1] AS destination, random() AS r, ${NOW} - floor(random() * ${SPAN_MS})::bigint AS at
                        FROM generate_series(0, ${DELIVERIES - 1}) AS i) g) s) d`)
    for (const def of deliveryIndexes) await c.query(def)
    await c.query(`
      INSERT INTO calls (id, tenant, agent_id, customer_phone, idempotency_key, trace_id, conversation_id, previous_conversation_id, scheduled_for, parameters, retry_context, metadata, recipe, campaign, status, error, created_at, updated_at)
      SELECT 'call_' || lpad(i::text, 7, '0'), 'bench', 101, phone, 'idem_' || i, 'ctr_' || i, CASE WHEN status = 'initiated' THEN 'conv_call_' || i END,
             CASE WHEN recipe IS NOT NULL AND i > 0 THEN 'conv_call_' || (i - 1) END, NULL, '[{"name":"customer_phone","value":"' || phone || '"}]',
             CASE WHEN recipe IS NOT NULL THEN '{"attempt":2}' END, NULL, recipe, CASE WHEN i % 3 = 0 THEN 'spring' END, status,
             CASE WHEN status = 'failed' THEN 'upstream answered 500' END, at, at
      FROM (SELECT i, '+9198' || lpad((i % 100000000)::text, 8, '0') AS phone, CASE WHEN i % 10 < 7 THEN '${RECIPE}' END AS recipe, ${NOW} - floor(random() * ${SPAN_MS})::bigint AS at,
                   CASE WHEN r < 0.9 THEN 'initiated' WHEN r < 0.95 THEN 'scheduled' WHEN r < 0.98 THEN 'failed' ELSE 'rejected' END AS status
            FROM (SELECT i, random() AS r FROM generate_series(0, ${CALLS - 1}) AS i) g) c`)
    await c.query(`
      INSERT INTO recipe_event_fires (recipe, event_id, fired_at, status, attempts, next_attempt_at, claimed_by, claimed_until, run_id, last_error)
      SELECT '${RECIPE}', 'evt_' || lpad(i::text, 7, '0'), at, status, CASE status WHEN 'dead' THEN 3 WHEN 'done' THEN 1 ELSE 0 END, at, NULL, NULL, NULL,
             CASE WHEN status = 'dead' THEN 'call failed' END
      FROM (SELECT i, ${NOW} - floor(random() * ${SPAN_MS})::bigint AS at, CASE WHEN r < 0.97 THEN 'done' WHEN r < 0.99 THEN 'dead' ELSE 'pending' END AS status
            FROM (SELECT i, random() AS r FROM generate_series(0, ${FIRES - 1}) AS i) g) f`)
    await c.query(
      `INSERT INTO recipe_runs (id, recipe, trigger, event_id, dry_run, status, started_at, ended_at, summary, plan, error, process)
       SELECT 'run_' || lpad(i::text, 7, '0'), '${RECIPE}', 'event', 'evt_' || lpad((i * 3)::text, 7, '0'), 0, 'succeeded', at, at + 800, $1, NULL, NULL, NULL
       FROM (SELECT i, ${NOW} - floor(((${RUNS} - i)::float8 / ${RUNS}) * ${SPAN_MS})::bigint AS at FROM generate_series(0, ${RUNS - 1}) AS i) r`,
      [RUN_SUMMARY],
    )
    await c.query(
      `INSERT INTO recipe_runs (id, recipe, trigger, event_id, dry_run, status, started_at, ended_at, summary, plan, error, process)
       SELECT 'nightly_' || i, '${NIGHTLY}', 'cron', NULL, 0, 'succeeded', at, at + 9000, $1, $2, NULL, NULL
       FROM (SELECT i, ${NOW} - (${NIGHTLY_RUNS} - i)::bigint * 86400000 AS at FROM generate_series(0, ${NIGHTLY_RUNS - 1}) AS i) r`,
      [NIGHTLY_SUMMARY, NIGHTLY_PLAN],
    )
    // A month-old table as autovacuum leaves it at its worst: vacuumed (its visibility map set, so counts can be read
    // from indexes alone), then as much of it changed since as makes autovacuum come back (the server's
    // autovacuum_vacuum_scale_factor, a fifth by default) — the newest days, rewritten as processing and delivery
    // rewrite them. Left unvacuumed, every count read each row; vacuumed whole, none: neither is a service's day.
    await c.query('VACUUM ANALYZE webhook_events')
    await c.query('VACUUM ANALYZE destination_deliveries')
    await c.query('VACUUM ANALYZE calls')
    await c.query('VACUUM ANALYZE recipe_event_fires')
    const { rows } = await c.query<{ share: string }>(`SELECT current_setting('autovacuum_vacuum_scale_factor') AS share`)
    const recent = NOW - Math.round(SPAN_MS * Number(rows[0]!.share))
    await c.query(`UPDATE webhook_events SET attempts = attempts WHERE received_at >= ${recent}`)
    await c.query(`UPDATE destination_deliveries SET attempts = attempts WHERE created_at >= ${recent}`)
    await c.query(`UPDATE calls SET updated_at = updated_at WHERE created_at >= ${recent}`)
    await c.query(`UPDATE recipe_event_fires SET attempts = attempts WHERE fired_at >= ${recent}`)
    await c.query('ANALYZE')
  })
}

/** A connection of its own to the benchmark's Postgres database, for what the service never does (schemas, bulk seeding). */
async function postgresAdmin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: POSTGRES_URL })
  await client.connect()
  try {
    return await work(client)
  } finally {
    await client.end()
  }
}

