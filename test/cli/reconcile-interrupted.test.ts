import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { H3, serve } from 'h3'
import { afterEach, expect, it } from 'vitest'
import { childEnv, ROOT, spawnCollecting } from './processes.ts'

const dirs: string[] = []
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})

// Killed by Ctrl-C, `reconcile` kept its 10-minute lease: every run meanwhile, the service's too, said "another replica
// is reconciling right now; nothing done" and did nothing — with no other replica anywhere.
it('reconcile stopped with Ctrl-C gives its lease back and exits 130; the next run reconciles', async () => {
  let hang = true
  let asked = 0
  const ended = Date.now() - 3_600_000
  const listed = [{ agent_id: 101, contact_number: '+919876543210', conversation_id: 'conv-ctrl-c_1', duration_seconds: 5, start_timestamp: ended - 60_000, end_timestamp: ended, status: 'no_answer' }]
  const upstream = new H3()
    .get('/v1/conversations', () => ({ data: listed, has_more: false, total: 1 }))
    .get('/v1/conversations/:id', async () => {
      asked++
      // The first run's detail never answers (a slow provider): it is under way when Ctrl-C comes.
      if (hang) await new Promise(() => {})
      return { data: { ...listed[0], failure_reason: null, results: {}, trace_id: 'trace-ctrl-c' } }
    })
  const server = serve(upstream, { port: 0, hostname: '127.0.0.1', silent: true })
  await server.ready()
  const dataDir = mkdtempSync(join(tmpdir(), 'sb-reconcile-int-'))
  dirs.push(dataDir)
  const env = childEnv({ DATA_DIR: dataDir, VOICE_API_KEY: 'sk_test_ctrl_c', VOICE_API_BASE_URL: server.url!, WEBHOOK_SECRET: 'whsec_ctrl_c', UPSTREAM_TIMEOUT_MS: '120000' })
  try {
    const bin = join(ROOT, 'src/bin.mjs')
    // A service's database (reconcile queues into the one the service uses: none there, it refuses).
    expect((await spawnCollecting(process.execPath, [bin, 'migrate'], env).exited).code).toBe(0)
    const first = spawnCollecting(process.execPath, [bin, 'reconcile'], env)
    await expect.poll(() => asked, { timeout: 30_000, interval: 50 }).toBe(1)
    first.child.kill('SIGINT')
    const stopped = await first.exited
    expect(stopped.code).toBe(130)
    expect(first.stdout()).toContain('stopped by a signal: what was queued stays queued; run reconcile again for the rest')
    hang = false
    const second = spawnCollecting(process.execPath, [bin, 'reconcile'], env)
    expect((await second.exited).code).toBe(0)
    expect(second.stdout()).toContain('queued reconcile:conv-ctrl-c_1:no_answer')
  } finally {
    await server.close(true)
  }
}, 60_000)
