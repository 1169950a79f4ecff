import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { getPriority, tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { dayRange } from '../../src/reports/day-range.ts'
import { startServer, type RunningServer } from '../../src/server.ts'
import { FIXTURE_RECIPES_DIR } from '../helpers/recipes.ts'
import { cookieHeader, login, TOKEN } from './helpers.ts'

/** CPU time (ms) and nice value of each thread of this process (Linux /proc). */
function threads(): Array<{ tid: number; nice: number; cpuMs: number }> {
  return readdirSync('/proc/self/task').map((tid) => {
    const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return { tid: Number(tid), nice: Number(fields[16]), cpuMs: ((Number(fields[11]) + Number(fields[12])) * 1000) / 100 }
  })
}

const DAY = '2026-11-20'
const TZ = 'Asia/Kolkata'
const ROWS = 20_000

describe.runIf(process.platform === 'linux')('the dashboard report preview under serve', () => {
  let server: RunningServer | undefined
  let dataDir: string | undefined
  afterEach(async () => {
    await server?.close()
    if (dataDir) rmSync(dataDir, { recursive: true, force: true })
    server = dataDir = undefined
  })

  it("is built in the processing thread, not on the receiver's", async () => {
    // The processing thread is told apart by its nice value.
    const nice = Math.min(19, getPriority() + 7)
    dataDir = mkdtempSync(join(tmpdir(), 'sb-preview-'))
    server = await startServer({
      env: {
        PORT: '0', DATA_DIR: dataDir, RECIPES_DIR: FIXTURE_RECIPES_DIR, WEBHOOK_SECRET: 'whsec_preview_test', LOG_LEVEL: 'silent',
        ADMIN_TOKEN: TOKEN, RECIPES_TIMEZONE: TZ, PROCESSING_NICE: String(nice), RECONCILE_INTERVAL_SECONDS: '0',
      },
      processing: 'thread',
    })
    // A day big enough that building its report takes a visible share of a core.
    const { startMs, endMs } = dayRange(DAY, TZ)
    const sqlite = server.rt.store.sqlite!
    const insert = sqlite.prepare(`INSERT INTO conversations (conversation_id, agent_id, contact_number, status, terminal, duration_seconds, started_at, ended_at,
      failure_reason, trace_id, from_phone, results, call_parameters, last_event_at, source, created_at, updated_at)
      VALUES (?, 101, ?, ?, 1, 30, ?, ?, NULL, ?, '+918035550101', ?, '{}', ?, 'webhook', ?, ?)`)
    sqlite.transaction(() => {
      for (let i = 0; i < ROWS; i++) {
        const ended = startMs + Math.floor(((endMs - startMs) * i) / ROWS)
        const status = i % 3 === 0 ? 'no_answer' : 'completed'
        insert.run(`conv_p${i}`, `+9198${String(i).padStart(8, '0')}`, status, ended - 30_000, ended, `tr_p${i}`, status === 'completed' ? '{"intent":"callback"}' : null, ended, ended, ended)
      }
    })()
    const { jar } = await login(server.url)
    const cookie = cookieHeader(jar)

    const niced = () => threads().filter((t) => t.nice === nice)
    expect(niced()).toHaveLength(1)
    // This test runs on the process's main thread (vitest's forks pool), which is also the server's.
    const main = () => threads().find((t) => t.tid === process.pid)!.cpuMs
    const processingBefore = niced()[0]!.cpuMs
    const mainBefore = main()
    const res = await fetch(`${server.url}/ui/mail/preview?date=${DAY}`, { headers: { cookie } })
    const processingMs = niced()[0]!.cpuMs - processingBefore
    const mainMs = main() - mainBefore

    expect(res.status).toBe(200)
    expect(await res.text()).toContain('20,000')
    // The build's CPU was spent in the processing thread; the main thread only passed the request on.
    expect(processingMs).toBeGreaterThan(mainMs * 2)
  }, 60_000)
})
