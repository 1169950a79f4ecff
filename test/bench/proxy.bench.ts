/**
 * Proxy cache benchmark (DESIGN.md → Budgets):
 *   1. cache-HIT throughput through switchboard's /v1 vs a bare h3 handler answering a similar JSON body;
 *   2. HIT vs MISS latency with 50 ms of latency injected into a tiny upstream.
 * Load comes from a separate process (keep-alive HTTP, fixed concurrency, fixed duration), so the server
 * under test has a core to itself. Loopback only; every loop is bounded.
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { H3, serve } from 'h3'
import { loadConfig } from '../../src/config/load.ts'
import { createRuntime } from '../../src/runtime.ts'
import { createApp } from '../../src/server.ts'
import { createSilentLogger } from '../../src/utils/logger.ts'

const UPSTREAM_LATENCY_MS = 50
const DURATION_MS = Number(process.env.BENCH_DURATION_MS ?? 5000)
const CONCURRENCY = 16
const KEY = 'sk_bench_key'

function conversation(id: string) {
  return {
    data: {
      agent_id: 101,
      contact_number: '+919876543210',
      conversation_id: id,
      duration_seconds: 42,
      failure_reason: null,
      results: { intent: 'pay_later', promised_date: '2026-01-05' },
      status: 'completed',
      trace_id: '6f1c2d4e-8a9b-4c3d-9e2f-1a2b3c4d5e6f',
      transcript: [
        { role: 'agent', message: 'Hello, this is Acme calling about your account.' },
        { role: 'human', message: 'Yes, I can pay next week.' },
      ],
      recording_url: `/v1/conversations/${id}/recording`,
    },
  }
}

const LOADGEN = `
import http from 'node:http'
const [url, concurrency, durationMs, key] = process.argv.slice(1)
const agent = new http.Agent({ keepAlive: true, maxSockets: Number(concurrency) })
const target = new URL(url)
let done = 0, failed = 0
const end = Date.now() + Number(durationMs)
function one() {
  return new Promise((resolve) => {
    const req = http.request({ host: target.hostname, port: target.port, path: target.pathname, agent, headers: { authorization: 'Bearer ' + key } }, (res) => {
      res.resume()
      res.on('end', () => { if (res.statusCode === 200) done++; else failed++; resolve() })
    })
    req.on('error', () => { failed++; resolve() })
    req.end()
  })
}
async function worker() { while (Date.now() < end) await one() }
const started = Date.now()
await Promise.all(Array.from({ length: Number(concurrency) }, worker))
process.stdout.write(JSON.stringify({ done, failed, ms: Date.now() - started }))
agent.destroy()
`

function load(url: string, durationMs: number): Promise<{ rps: number; failed: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', LOADGEN, url, String(CONCURRENCY), String(durationMs), KEY], { stdio: ['ignore', 'pipe', 'inherit'] })
    let out = ''
    child.stdout.on('data', (c) => (out += c))
    child.on('error', reject)
    child.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`load generator exited with ${code}`))
      const r = JSON.parse(out) as { done: number; failed: number; ms: number }
      resolve({ rps: (r.done / r.ms) * 1000, failed: r.failed })
    })
  })
}

async function timed(url: string): Promise<{ ms: number; cache: string | null }> {
  const t0 = performance.now()
  const res = await fetch(url, { headers: { authorization: `Bearer ${KEY}` } })
  await res.arrayBuffer()
  return { ms: performance.now() - t0, cache: res.headers.get('x-cache') }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

async function main(): Promise<number> {
  // A tiny provider: every conversation exists and is terminal, after 50 ms.
  const upstreamApp = new H3().get('/v1/conversations/:id', async (event) => {
    await new Promise((r) => setTimeout(r, UPSTREAM_LATENCY_MS))
    return conversation(event.context.params!.id!)
  })
  const upstream = serve(upstreamApp, { port: 0, hostname: '127.0.0.1', silent: true, gracefulShutdown: false })
  await upstream.ready()

  const bareApp = new H3().get('/v1/conversations/:id', (event) => conversation(event.context.params!.id!))
  const bare = serve(bareApp, { port: 0, hostname: '127.0.0.1', silent: true, gracefulShutdown: false })
  await bare.ready()

  const dataDir = mkdtempSync(join(tmpdir(), 'sb-bench-proxy-'))
  const config = loadConfig({
    env: {
      DATA_DIR: dataDir,
      VOICE_API_KEY: 'sk_workspace',
      VOICE_API_BASE_URL: upstream.url!.replace(/\/$/, ''),
      WEBHOOK_SECRET: 'whsec_bench',
      LOG_LEVEL: 'silent',
      PORT: '0',
    },
  })
  const rt = await createRuntime(config, { log: createSilentLogger() })
  const proxy = serve(createApp(rt), { port: 0, hostname: '127.0.0.1', silent: true, gracefulShutdown: false })
  await proxy.ready()
  const base = proxy.url!.replace(/\/$/, '')
  const bareBase = bare.url!.replace(/\/$/, '')

  try {
    // Latency: a fresh id is a MISS (50 ms upstream); the same id again is a HIT.
    const miss: number[] = []
    const hit: number[] = []
    for (let i = 0; i < 15; i++) {
      const m = await timed(`${base}/v1/conversations/bench-miss-${i}_1`)
      if (m.cache !== 'MISS') throw new Error(`expected MISS, got ${m.cache}`)
      miss.push(m.ms)
    }
    for (let i = 0; i < 300; i++) {
      const h = await timed(`${base}/v1/conversations/bench-miss-0_1`)
      if (h.cache !== 'HIT') throw new Error(`expected HIT, got ${h.cache}`)
      hit.push(h.ms)
    }

    // Throughput: the cached entry vs the bare handler, alternating in short rounds so that load from
    // anything else on the machine hits both alike; the ratio is the median of the rounds.
    await timed(`${base}/v1/conversations/bench-hot_1`)
    await load(`${bareBase}/v1/conversations/bench-hot_1`, 500)
    await load(`${base}/v1/conversations/bench-hot_1`, 500)
    const ratios: number[] = []
    let bareRps = 0
    let hitRps = 0
    const rounds = 5
    for (let round = 0; round < rounds; round++) {
      const b = await load(`${bareBase}/v1/conversations/bench-hot_1`, DURATION_MS / rounds)
      const p = await load(`${base}/v1/conversations/bench-hot_1`, DURATION_MS / rounds)
      if (b.failed || p.failed) throw new Error(`failed requests: proxy ${p.failed}, bare ${b.failed}`)
      ratios.push(p.rps / b.rps)
      bareRps += b.rps / rounds
      hitRps += p.rps / rounds
    }
    const hits = { rps: hitRps }
    const throughputRatio = median(ratios)
    const speedup = median(miss) / median(hit)
    console.log(`bare h3          ${bareRps.toFixed(0)} req/s`)
    console.log(`proxy cache HIT  ${hits.rps.toFixed(0)} req/s  → ${(throughputRatio * 100).toFixed(0)} % of bare h3, median of ${rounds} alternating rounds (budget ≥ 50 %)`)
    console.log(`latency (median) MISS ${median(miss).toFixed(2)} ms (upstream ${UPSTREAM_LATENCY_MS} ms) · HIT ${median(hit).toFixed(2)} ms → HIT ${speedup.toFixed(0)}× faster (budget ≥ 20×)`)
    const ok = throughputRatio >= 0.5 && speedup >= 20
    if (!ok) console.error('proxy benchmark missed a budget')
    return ok ? 0 : 1
  } finally {
    await proxy.close(true)
    await bare.close(true)
    await upstream.close(true)
    await rt.close()
    rmSync(dataDir, { recursive: true, force: true })
  }
}

process.exitCode = await main()
