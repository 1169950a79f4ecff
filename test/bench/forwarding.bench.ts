/**
 * Forwarding benchmark (DESIGN.md → Budgets: forwarding ≥ 50 % of a local sink's own capacity).
 * Two sinks run in a child process (their own event loop). In the same run we measure:
 *   1. the sinks' own capacity: a bare keep-alive client POSTing the same signed-size bodies to both
 *      sinks with the same total concurrency the worker uses (2 destinations × FWD_CONCURRENCY, 32) — once
 *      with node:http and once with undici (the worker's client), the higher figure counting: on two cores
 *      a client saturates its own core before the sinks do, so the faster client is the closer measure;
 *   2. forwarding: 10,000 events enqueued in the outbox (fanned out to both destinations: 20,000
 *      deliveries) on a real SQLite file, drained by the delivery worker — claims, Standard Webhooks
 *      signing, HTTP, and the group-committed outcome of every attempt — on a connection set up as in
 *      `serve`, where the worker runs in the processing thread (synchronous=NORMAL: useAsProcessingConnection),
 *      and the file's checkpoints on a thread of their own (src/db/checkpointer.ts). Timed until the sinks
 *      have counted every delivery; every one is then checked recorded as delivered in the outbox.
 *   3. as shipped: `node src/bin.mjs serve` with the two sinks as DESTINATIONS, a burst of FWD_SERVICE_EVENTS
 *      signed webhooks (distinct contacts, no recipes), timed from the first webhook sent to the last delivery
 *      counted by the sinks — receiver, processing, outbox and delivery worker sharing the machine as a user
 *      runs them. Printed as a ratio to the same capacity (informational: the budget is on 2), with the CPU the
 *      service, the sinks and the load generator used meanwhile (on two cores, how close the run came to the machine).
 * Steps 1 and 2 alternate for FWD_ROUNDS rounds (default 3) and each figure is the median: on a shared 2-core
 * machine either one moves by a third between runs. Prints deliveries/s, the worker's CPU per delivery and the
 * ratio, and the CPU each request cost this process (the bare client, or the worker) and the sinks' process, read
 * from /proc around each measurement: on two cores the three share, a worker's CPU per delivery is what sets its
 * ratio. Budgets: ratio ≥ 0.5 and ≥ 2,000 deliveries/s. Loopback only. FWD_EVENTS, FWD_SERVICE_EVENTS
 * (0 skips step 3) and FWD_CONCURRENCY change the size of the run (for quick local checks); BENCH_PROF=<dir> writes a
 * CPU profile of each drain (step 2 alone) there.
 */
import { providerIds } from './provider-ids.ts'
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import http from 'node:http'
import { availableParallelism, tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { startServe } from '../helpers/serve-child.ts'
import { processCpuMs } from '../helpers/threads.ts'

const EVENTS = Number(process.env.FWD_EVENTS ?? 10_000)
const SERVICE_EVENTS = Number(process.env.FWD_SERVICE_EVENTS ?? 5_000)
const WEBHOOK_SECRET = 'whsec_bench_forwarding'
const CONCURRENCY = Number(process.env.FWD_CONCURRENCY ?? 32)
const CAPACITY_MS = 3_000
const ROUNDS = Number(process.env.FWD_ROUNDS ?? 3)
const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'
/** The sinks' process, whose CPU time is read around each measurement (Linux). */
let sinksPid: number | undefined

/** CPU per request, µs, of this process and of the sinks over a measurement (undefined off Linux). */
interface CpuSplit {
  clientUs: number
  sinksUs: number | undefined
}

function cpuSplit(used: NodeJS.CpuUsage, sinksBefore: number | undefined, requests: number): CpuSplit {
  const sinksAfter = processCpuMs(sinksPid)
  const n = Math.max(1, requests)
  return { clientUs: (used.user + used.system) / n, sinksUs: sinksBefore === undefined || sinksAfter === undefined ? undefined : ((sinksAfter - sinksBefore) * 1000) / n }
}

// ── sinks (child process) ─────────────────────────────────────────────────────────────────────────
async function serveSinks(): Promise<void> {
  const ports: number[] = []
  // Deliveries received by both sinks (GET /count on either answers the total).
  let received = 0
  for (let i = 0; i < 2; i++) {
    const server = http.createServer((req, res) => {
      req.resume()
      if (req.method === 'GET' && req.url === '/count') return req.on('end', () => res.writeHead(200).end(String(received)))
      req.on('end', () => {
        received++
        res.writeHead(204).end()
      })
    })
    server.keepAliveTimeout = 60_000
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    ports.push((server.address() as { port: number }).port)
  }
  process.stdout.write(JSON.stringify({ ports }) + '\n')
  process.stdin.resume()
  process.stdin.on('end', () => process.exit(0))
}

// ── load side (parent) ────────────────────────────────────────────────────────────────────────────
/** Event `i`'s ids, provider-shaped (./provider-ids.ts), the same at every use. */
const idsByIndex = new Map<number, ReturnType<typeof providerIds>>()
function idsFor(i: number): ReturnType<typeof providerIds> {
  let ids = idsByIndex.get(i)
  if (!ids) idsByIndex.set(i, (ids = providerIds()))
  return ids
}

function body(i: number): string {
  const at = new Date().toISOString()
  const { eventId, conversationId, traceId } = idsFor(i)
  return JSON.stringify({
    event_id: eventId,
    event_type: 'call.completed',
    timestamp: at,
    data: {
      call: {
        agent_id: 101, call_parameters: { customer_phone: '+919876543210', name: 'Asha' }, conversation_id: conversationId, duration_seconds: 42,
        started_at: at, ended_at: at, failure_reason: null, from_phone: '+918035550101', to_phone: '+919876543210', recording_url: null, status: 'completed', trace_id: traceId,
      },
      results: { intent: 'pay_later', amount_promised: 2500 },
      retry: { attempt_number: 1, is_final_attempt: true, max_attempts: 1, next_retry_at: null },
      retry_context: null,
      transcript: 'BOT: Namaste, am I speaking with Asha?\nHUMAN: Yes, tell me.\nBOT: This is about your payment due on the 5th.',
    },
  })
}

/**
 * The sinks' own capacity as one bare keep-alive client drives them: `node:http`, and undici (the client the
 * worker uses). Each client saturates its own core before the sinks do, so the capacity is the higher of the two.
 */
async function sinkCapacity(ports: number[], client: 'node:http' | 'undici'): Promise<{ perSecond: number; cpu: CpuSplit }> {
  const { signedHeaders, signingKeys } = await import('../../src/destinations/sign.ts')
  const keys = signingKeys([SECRET])
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY * ports.length })
  const { Pool } = await import('undici')
  const pools = client === 'undici' ? ports.map((p) => new Pool(`http://127.0.0.1:${p}`, { connections: CONCURRENCY })) : []
  const payload = Buffer.from(body(0))
  let done = 0
  const deadline = performance.now() + CAPACITY_MS
  const started = performance.now()
  const cpu = process.cpuUsage()
  const sinksBefore = processCpuMs(sinksPid)
  const lane = async (index: number) => {
    const port = ports[index]!
    while (performance.now() < deadline) {
      const headers = { 'content-type': 'application/json', 'content-length': String(payload.length), ...signedHeaders(keys, `msg_${done}`, Date.now(), payload.toString()) }
      if (client === 'undici') {
        const res = await pools[index]!.request({ path: '/', method: 'POST', headers, body: payload })
        await res.body.dump()
      } else {
        await new Promise<void>((resolve, reject) => {
          const req = http.request({ host: '127.0.0.1', port, path: '/', method: 'POST', agent, headers }, (res) => {
            res.resume()
            res.on('end', () => resolve())
          })
          req.on('error', reject)
          req.end(payload)
        })
      }
      done++
    }
  }
  await Promise.all(ports.flatMap((_, i) => Array.from({ length: CONCURRENCY }, () => lane(i))))
  const perSecond = done / ((performance.now() - started) / 1000)
  const split = cpuSplit(process.cpuUsage(cpu), sinksBefore, done)
  agent.destroy()
  for (const pool of pools) await pool.destroy()
  return { perSecond, cpu: split }
}

/** BENCH_PROF=<dir>: a V8 CPU profile of the drain alone (step 2) is written there, one per round. */
async function startProfile(): Promise<{ stop(): Promise<void> } | undefined> {
  const dir = process.env.BENCH_PROF
  if (!dir) return undefined
  const { Session } = await import('node:inspector/promises')
  const { mkdirSync, writeFileSync } = await import('node:fs')
  const session = new Session()
  session.connect()
  await session.post('Profiler.enable')
  await session.post('Profiler.start')
  return {
    async stop() {
      const { profile } = await session.post('Profiler.stop')
      mkdirSync(dir, { recursive: true })
      writeFileSync(join(dir, `forwarding-${Date.now()}.cpuprofile`), JSON.stringify(profile))
      session.disconnect()
    },
  }
}

async function forwarding(ports: number[], dataDir: string): Promise<{ perSecond: number; delivered: number; ms: number; cpu: CpuSplit }> {
  const { loadConfig } = await import('../../src/config/load.ts')
  const { createRuntime } = await import('../../src/runtime.ts')
  const { createSilentLogger } = await import('../../src/utils/logger.ts')
  const { enqueueDeliveries } = await import('../../src/destinations/outbox.ts')
  const { startDeliveryWorker } = await import('../../src/destinations/worker.ts')
  const destinations = ports.map((port, i) => ({ name: `sink${i + 1}`, url: `http://127.0.0.1:${port}/hooks`, secret: SECRET, allowHttp: true, concurrency: CONCURRENCY }))
  const config = loadConfig({ env: { DATA_DIR: dataDir, LOG_LEVEL: 'silent', PORT: '0', ALLOW_PRIVATE_DESTINATIONS: '1', DESTINATIONS: JSON.stringify(destinations) } })
  const rt = await createRuntime(config, { log: createSilentLogger() })
  const { useAsProcessingConnection } = await import('../../src/db/connect.ts')
  useAsProcessingConnection(rt.store)
  // …with the file's checkpoints on a thread of their own, as `serve` runs them.
  const { startCheckpointer } = await import('../../src/db/checkpointer.ts')
  const checkpointer = startCheckpointer(rt.store.sqlite!.name)
  const now = Date.now()
  const events = Array.from({ length: EVENTS }, (_, i) => ({ event_id: idsFor(i).eventId, event_type: 'call.completed', agent_id: 101, conversation_id: idsFor(i).conversationId, received_at: now, body: body(i) }))
  for (let i = 0; i < events.length; i += 1000) await rt.store.db.transaction().execute((trx) => enqueueDeliveries(trx, rt, events.slice(i, i + 1000)))
  const total = EVENTS * destinations.length
  // Progress as the sinks count it (as step 3 does): a count(*) over the outbox every 50 ms cost the worker's
  // own thread ~1 ms a time. Every delivery is then checked recorded as delivered in the database.
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
  const received = async () => Number((await post(agent, ports[0]!, '/count', undefined, {}, 'GET')).text)
  const before = await received()
  const profile = await startProfile()
  const started = performance.now()
  const cpu = process.cpuUsage()
  const sinksBefore = processCpuMs(sinksPid)
  const worker = startDeliveryWorker(rt)
  let arrived = 0
  const limit = performance.now() + 120_000
  while (arrived < total && performance.now() < limit) {
    await new Promise((r) => setTimeout(r, 50))
    arrived = (await received()) - before
  }
  const ms = performance.now() - started
  const split = cpuSplit(process.cpuUsage(cpu), sinksBefore, arrived)
  await profile?.stop()
  await worker.idle()
  const delivered = Number((await rt.store.db.selectFrom('destination_deliveries').select((eb) => eb.fn.countAll<number>().as('n')).where('status', '=', 'delivered').executeTakeFirstOrThrow()).n)
  agent.destroy()
  await worker.stop()
  await checkpointer.close()
  await rt.close()
  // This process runs only the worker (and the polling above); the sinks have their own.
  return { perSecond: arrived / (ms / 1000), delivered: Math.min(arrived, delivered), ms, cpu: split }
}

function post(agent: http.Agent, port: number, path: string, body: Buffer | undefined, headers: Record<string, string>, method = 'POST'): Promise<{ status: number; text: string }> {
  return new Promise((done, fail) => {
    const req = http.request({ host: '127.0.0.1', port, path, method, agent, headers: body ? { 'content-type': 'application/json', 'content-length': String(body.length), ...headers } : headers }, (res) => {
      let text = ''
      res.on('data', (c: Buffer) => (text += c.toString()))
      res.on('end', () => done({ status: res.statusCode ?? 0, text }))
    })
    req.on('error', fail)
    req.end(body)
  })
}

/** The whole service as a user runs it, forwarding a burst of webhooks to the sinks. */
async function forwardingAsShipped(ports: number[]): Promise<{ perSecond: number; delivered: number; ms: number; acknowledgedMs: number; halfMs: number; cpu: { serviceMs?: number; sinksMs?: number; clientMs: number } }> {
  const { signFormant } = await import('../../src/webhooks/verify.ts')
  const recipesDir = mkdtempSync(join(tmpdir(), 'sb-bench-fwd-recipes-'))
  const destinations = ports.map((p, i) => ({ name: `sink${i + 1}`, url: `http://127.0.0.1:${p}/hooks`, secret: SECRET, allowHttp: true, concurrency: CONCURRENCY }))
  const service = await startServe({
    // Logging as shipped (info: a line per stored webhook, read from a pipe).
    RECIPES_DIR: recipesDir, WEBHOOK_SECRET, LOG_LEVEL: 'info', ALLOW_PRIVATE_DESTINATIONS: '1', DESTINATIONS: JSON.stringify(destinations),
  })
  const port = service.port
  const agent = new http.Agent({ keepAlive: true, maxSockets: 128 })
  const count = async () => Number((await post(agent, ports[0]!, '/count', undefined, {}, 'GET')).text)
  try {
    // Measured once processing runs: /readyz answers while the processing thread still loads its modules.
    const processing = async () => (JSON.parse((await post(agent, port, '/readyz', undefined, {}, 'GET')).text) as { processing?: string }).processing
    for (const deadline = Date.now() + 30_000; (await processing()) !== 'running'; ) {
      if (Date.now() > deadline) throw new Error('processing did not start within 30 s')
      await new Promise((r) => setTimeout(r, 100))
    }
    const now = new Date().toISOString()
    const events = Array.from({ length: SERVICE_EVENTS }, (_, i) => {
      const fresh = providerIds()
      const id = fresh.eventId
      const payload = JSON.parse(body(i)) as { event_id: string; timestamp: string; data: { call: { conversation_id: string; trace_id: string } } }
      payload.event_id = id
      payload.timestamp = now
      payload.data.call.conversation_id = fresh.conversationId
      payload.data.call.trace_id = fresh.traceId
      const raw = Buffer.from(JSON.stringify(payload))
      return { raw, headers: { 'x-formantai-signature': signFormant(raw, WEBHOOK_SECRET), 'x-formantai-timestamp': String(Math.floor(Date.now() / 1000)), 'x-formantai-event-id': id } }
    })
    const before = await count()
    // CPU of the three processes over the run (Linux: /proc): on two cores, what the service as shipped can reach.
    const serviceCpu0 = processCpuMs(service.child.pid)
    const sinksCpu0 = processCpuMs(sinksPid)
    const clientCpu0 = process.cpuUsage()
    const started = performance.now()
    let next = 0
    await Promise.all(Array.from({ length: 64 }, async () => {
      while (next < events.length) {
        const e = events[next++]!
        const r = await post(agent, port, '/webhooks/formant', e.raw, e.headers)
        if (r.status !== 204) throw new Error(`webhook answered ${r.status}: ${r.text}`)
      }
    }))
    const acknowledgedMs = performance.now() - started
    const total = SERVICE_EVENTS * destinations.length
    let delivered = 0
    let halfMs = 0
    const limit = performance.now() + 120_000
    while (delivered < total && performance.now() < limit) {
      await new Promise((r) => setTimeout(r, 50))
      delivered = (await count()) - before
      if (!halfMs && delivered >= total / 2) halfMs = performance.now() - started
    }
    const ms = performance.now() - started
    const serviceCpu1 = processCpuMs(service.child.pid)
    const sinksCpu1 = processCpuMs(sinksPid)
    const clientCpu = process.cpuUsage(clientCpu0)
    const cpu = {
      serviceMs: serviceCpu0 === undefined || serviceCpu1 === undefined ? undefined : serviceCpu1 - serviceCpu0,
      sinksMs: sinksCpu0 === undefined || sinksCpu1 === undefined ? undefined : sinksCpu1 - sinksCpu0,
      clientMs: (clientCpu.user + clientCpu.system) / 1000,
    }
    return { perSecond: delivered / (ms / 1000), delivered, ms, acknowledgedMs, halfMs, cpu }
  } finally {
    agent.destroy()
    await service.stop()
    rmSync(recipesDir, { recursive: true, force: true })
  }
}

async function main(): Promise<void> {
  const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), '--sinks'], { stdio: ['pipe', 'pipe', 'inherit'] })
  sinksPid = child.pid
  const ports = await new Promise<number[]>((resolve) => {
    let buffer = ''
    child.stdout!.on('data', (c: Buffer) => {
      buffer += c.toString()
      if (buffer.includes('\n')) resolve((JSON.parse(buffer.split('\n')[0]!) as { ports: number[] }).ports)
    })
  })
  const dataDir = mkdtempSync(join(tmpdir(), 'sb-bench-fwd-'))
  try {
    await sinkCapacity(ports, 'node:http') // warm-up
    await sinkCapacity(ports, 'undici')
    // Alternating rounds, each figure the median: a busy neighbour on a shared 2-core machine moves either
    // one by a third from one run to the next.
    const byHttp: number[] = []
    const byUndici: Array<{ perSecond: number; cpu: CpuSplit }> = []
    const runs: Array<{ perSecond: number; delivered: number; ms: number; cpu: CpuSplit }> = []
    for (let round = 0; round < ROUNDS; round++) {
      byHttp.push((await sinkCapacity(ports, 'node:http')).perSecond)
      byUndici.push(await sinkCapacity(ports, 'undici'))
      const dir = join(dataDir, `round-${round}`)
      runs.push(await forwarding(ports, dir))
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
    const undiciRates = byUndici.map((r) => r.perSecond)
    const capacity = Math.max(median(byHttp), median(undiciRates))
    const undiciMedian = byUndici.find((r) => r.perSecond === median(undiciRates))!
    const fwd = runs.find((r) => r.perSecond === median(runs.map((x) => x.perSecond)))!
    const ratio = fwd.perSecond / capacity
    const list = (xs: number[]) => xs.map((c) => c.toFixed(0)).join(', ')
    const cpuText = (us: number | undefined) => (us === undefined ? 'n/a' : `${us.toFixed(0)} µs`)
    console.log(`sinks' own capacity (bare client, ${CONCURRENCY}×2 in flight): ${capacity.toFixed(0)} requests/s, the higher of node:http ${median(byHttp).toFixed(0)} (median of ${ROUNDS}: ${list(byHttp)}) and undici ${median(undiciRates).toFixed(0)} (${list(undiciRates)}); CPU a request: undici client ${undiciMedian.cpu.clientUs.toFixed(0)} µs, sinks ${cpuText(undiciMedian.cpu.sinksUs)}`)
    console.log(`forwarding: ${fwd.delivered} deliveries (${EVENTS} events × 2 destinations) in ${(fwd.ms / 1000).toFixed(2)} s = ${fwd.perSecond.toFixed(0)} deliveries/s (median of ${ROUNDS}: ${runs.map((r) => r.perSecond.toFixed(0)).join(', ')}); CPU a delivery: worker ${fwd.cpu.clientUs.toFixed(0)} µs, sinks ${cpuText(fwd.cpu.sinksUs)}`)
    console.log(`ratio: ${ratio.toFixed(2)}× the sinks' capacity (budget ≥ 0.50×; ≥ 2,000 deliveries/s)`)
    if (SERVICE_EVENTS === 0) {
      const pass = runs.every((r) => r.delivered === EVENTS * 2) && ratio >= 0.5 && fwd.perSecond >= 2000
      console.log(pass ? 'PASS (as shipped skipped: FWD_SERVICE_EVENTS=0)' : 'FAIL')
      process.exitCode = pass ? 0 : 1
      return
    }
    const shipped = await forwardingAsShipped(ports)
    console.log(`as shipped (serve, ${SERVICE_EVENTS} signed webhooks → 2 destinations, from the first webhook to the last delivery): ${shipped.delivered} deliveries in ${(shipped.ms / 1000).toFixed(2)} s = ${shipped.perSecond.toFixed(0)} deliveries/s → ${(shipped.perSecond / capacity).toFixed(2)}× the sinks' capacity (every webhook acknowledged at ${(shipped.acknowledgedMs / 1000).toFixed(2)} s, half the deliveries out at ${(shipped.halfMs / 1000).toFixed(2)} s)`)
    const seconds = (ms: number | undefined) => (ms === undefined ? 'n/a' : `${(ms / 1000).toFixed(2)} s`)
    const busy = (shipped.cpu.serviceMs ?? 0) + (shipped.cpu.sinksMs ?? 0) + shipped.cpu.clientMs
    console.log(`as shipped, CPU over those ${(shipped.ms / 1000).toFixed(2)} s: service ${seconds(shipped.cpu.serviceMs)}, sinks ${seconds(shipped.cpu.sinksMs)}, load generator ${seconds(shipped.cpu.clientMs)} — ${(busy / shipped.ms).toFixed(2)} of the machine's ${availableParallelism()} cores busy on average`)
    if (shipped.delivered !== SERVICE_EVENTS * 2) console.log(`as shipped: only ${shipped.delivered} of ${SERVICE_EVENTS * 2} deliveries arrived`)
    const pass = runs.every((r) => r.delivered === EVENTS * 2) && ratio >= 0.5 && fwd.perSecond >= 2000 && shipped.delivered === SERVICE_EVENTS * 2
    console.log(pass ? 'PASS' : 'FAIL')
    process.exitCode = pass ? 0 : 1
  } finally {
    child.stdin!.end()
    rmSync(dataDir, { recursive: true, force: true })
  }
}

if (process.argv.includes('--sinks')) await serveSinks()
else await main()
