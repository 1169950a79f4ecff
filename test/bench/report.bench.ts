/**
 * Daily report benchmark (issue 6): a day of 100,000 conversations in a real SQLite file (with a calls
 * ledger for a fifth of them), timed through buildDailyReport + renderDailyReport (figures, groups, trend,
 * HTML, text and the 100,000-row CSV, zipped as the mail attaches it). Baseline, measured in the same run: a plain SELECT of the same rows
 * with the same join. Budget: build + render ≤ 2 s.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadConfig } from '../../src/config/load.ts'
import { buildDailyReport, dayRange, renderDailyReport } from '../../src/reports/index.ts'
import { createRuntime } from '../../src/runtime.ts'
import { createManualClock } from '../../src/utils/clock.ts'
import { createSilentLogger } from '../../src/utils/logger.ts'
import { createSeededRandom } from '../../src/utils/random.ts'

const N = Number(process.env.BENCH_REPORT_ROWS ?? 100_000)
const BUDGET_MS = 2000
const DATE = '2026-11-20'
const TZ = 'Asia/Kolkata'
const STATUSES = ['completed', 'completed', 'completed', 'completed', 'no_answer', 'no_answer', 'busy', 'failed', 'socket_failure', 'unreachable', 'telephony_failed']
const INTENTS = ['interested', 'not_interested', 'callback', 'pay_later', 'wrong_number']
const REASONS: Record<string, string> = { no_answer: 'no_answer_timeout', busy: 'line_busy', failed: 'carrier_error', socket_failure: 'media_timeout', unreachable: 'invalid_number', telephony_failed: 'sip_503' }

const dir = mkdtempSync(join(tmpdir(), 'sb-bench-report-'))
try {
  const rt = await createRuntime(
    loadConfig({ env: { DATA_DIR: dir, DATABASE_URL: `sqlite:${join(dir, 'bench.db')}`, WEBHOOK_SECRET: 'whsec_bench', VOICE_API_KEY: 'sk_bench', VOICE_API_BASE_URL: 'http://127.0.0.1:9', LOG_LEVEL: 'silent' } }),
    { clock: createManualClock('2026-11-21T02:30:00Z'), random: createSeededRandom(7), log: createSilentLogger() },
  )
  const sqlite = rt.store.sqlite!
  const { startMs, endMs } = dayRange(DATE, TZ)
  const random = createSeededRandom(1)

  const seedStart = performance.now()
  const insertConversation = sqlite.prepare(`INSERT INTO conversations (conversation_id, agent_id, contact_number, status, terminal, duration_seconds, started_at, ended_at, failure_reason, trace_id, from_phone, recording_url, transcript, results, call_parameters, retry, retry_context, last_event_at, last_event_id, source, created_at, updated_at)
    VALUES (?, ?, ?, ?, 1, ?, ?, ?, ?, ?, '+918035550101', NULL, NULL, ?, ?, NULL, NULL, ?, NULL, 'webhook', ?, ?)`)
  const insertCall = sqlite.prepare(`INSERT INTO calls (id, tenant, agent_id, customer_phone, idempotency_key, trace_id, conversation_id, previous_conversation_id, scheduled_for, parameters, retry_context, metadata, recipe, campaign, status, error, created_at, updated_at)
    VALUES (?, 't', ?, ?, ?, ?, NULL, ?, NULL, '[]', NULL, NULL, ?, ?, 'initiated', NULL, ?, ?)`)
  sqlite.transaction(() => {
    for (let i = 0; i < N; i++) {
      const status = STATUSES[Math.floor(random.next() * STATUSES.length)]!
      const connected = status === 'completed' || status === 'socket_failure'
      const duration = connected ? 10 + Math.floor(random.next() * 300) : 0
      const ended = startMs + Math.floor(random.next() * (endMs - startMs))
      const agent = 101 + (i % 3)
      const trace = `tr_${i}`
      const phone = `+9198${String(i).padStart(8, '0')}`
      const results = status === 'completed' ? JSON.stringify({ intent: INTENTS[i % INTENTS.length], score: i % 10, note: i % 1000 === 0 ? '=SUM(A1:A9)' : 'ok' }) : null
      const params = JSON.stringify({ customer_name: `Customer ${i}`, ...(i % 7 === 0 ? { campaign: 'winback' } : {}) })
      insertConversation.run(`conv_${i}`, agent, phone, status, duration, ended - duration * 1000, ended, REASONS[status] ?? null, trace, results, params, ended, ended, ended)
      if (i % 5 === 0) insertCall.run(`call_${i}`, agent, phone, `idem_${i}`, trace, i % 10 === 0 ? `conv_prev_${i}` : null, i % 10 === 0 ? 'no-answer-followup' : 'nightly-batch', i % 10 === 0 ? null : 'diwali-offer', startMs - 1000, startMs - 1000)
    }
  })()
  const seedMs = performance.now() - seedStart

  const cpuMs = (start: NodeJS.CpuUsage) => {
    const d = process.cpuUsage(start)
    return (d.user + d.system) / 1000
  }
  const baseline = () => {
    const t = performance.now()
    const rows = sqlite
      .prepare(`SELECT c.conversation_id, c.agent_id, c.contact_number, c.status, c.duration_seconds, c.started_at, c.ended_at, c.failure_reason,
          c.trace_id, c.results, c.call_parameters, c.created_at, k.recipe, k.campaign, k.previous_conversation_id FROM conversations c LEFT JOIN calls k ON k.trace_id = c.trace_id
        WHERE (c.ended_at >= ? AND c.ended_at < ?) OR (c.ended_at IS NULL AND c.created_at >= ? AND c.created_at < ?)`)
      .all(startMs, endMs, startMs, endMs)
    if (rows.length !== N) throw new Error(`baseline read ${rows.length} rows, expected ${N}`)
    return performance.now() - t
  }
  const report = async () => {
    const cpu = process.cpuUsage()
    const t0 = performance.now()
    const built = await buildDailyReport(rt, { date: DATE, timezone: TZ })
    const t1 = performance.now()
    const rendered = renderDailyReport(built)
    const t2 = performance.now()
    if (built.totals.calls !== N) throw new Error(`report counted ${built.totals.calls} calls, expected ${N}`)
    return { build: t1 - t0, render: t2 - t1, total: t2 - t0, cpu: cpuMs(cpu), csvBytes: rendered.attachment.csvBytes, htmlBytes: rendered.html.length, attached: `${rendered.attachment.filename}, ${(rendered.attachment.content.length / 1024 / 1024).toFixed(1)} MiB` }
  }

  // One warm-up each (JIT, page cache), then the median of three.
  baseline()
  await report()
  const base = [baseline(), baseline(), baseline()].sort((a, b) => a - b)[1]!
  const runs = [await report(), await report(), await report()].sort((a, b) => a.total - b.total)
  const median = runs[1]!
  await rt.close()

  const ratio = median.total / base
  console.log(`seeded ${N.toLocaleString('en-US')} conversations in ${seedMs.toFixed(0)} ms`)
  console.log(`baseline: plain SELECT of the same rows (same join)   ${base.toFixed(0)} ms`)
  console.log(`report:   build ${median.build.toFixed(0)} ms + render ${median.render.toFixed(0)} ms = ${median.total.toFixed(0)} ms  (HTML ${(median.htmlBytes / 1024).toFixed(0)} KiB, CSV ${(median.csvBytes / 1024 / 1024).toFixed(1)} MiB attached as ${median.attached})`)
  console.log(`          CPU time ${median.cpu.toFixed(0)} ms (all threads; wall time above includes waiting for a core on a busy machine)`)
  console.log(`ratio:    report / baseline = ${ratio.toFixed(2)}×   budget: ≤ ${BUDGET_MS} ms → ${median.total <= BUDGET_MS ? 'OK' : 'MISSED'}`)
  if (median.total > BUDGET_MS) process.exitCode = 1
} finally {
  rmSync(dir, { recursive: true, force: true })
}
