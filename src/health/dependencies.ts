import { connect } from 'node:net'
import { Gauge } from 'prom-client'
import { ping } from '../db/connect.ts'
import type { Runtime } from '../runtime.ts'
import { listRecipeFiles } from '../recipes/loader.ts'
import { recipeSendsMail } from '../recipes/sends-mail.ts'
import { UPSTREAM_EVIDENCE_MS, upstreamStatus, watchUpstream } from './upstream-observation.ts'

/**
 * What switchboard depends on, and whether each answers: the database (probed), the SMTP relay (probed
 * when a recipe mails through it), the provider (observed from the requests this process makes anyway —
 * the proxy's and every provider client's — for UPSTREAM_EVIDENCE_MS; probing it would spend the tenant's
 * rate limit, so with no recent request it is `unknown`). Probe results are cached for a few seconds so
 * /readyz and /metrics stay cheap under frequent polling, yet reflect an outage within 5 s. Probe ages are
 * real time: a probe's cache is about the wall clock, even under a test's manual clock. An observation's
 * age is the runtime's clock, which also stamps the requests it judges.
 */
export type DependencyName = 'database' | 'smtp' | 'upstream'

/** `unknown`: nothing observed recently (the provider only); it does not make the service degraded. */
export type DependencyStatus = { state: 'up' } | { state: 'down'; error?: string } | { state: 'unknown' }

const DATABASE_TTL_MS = 1_000
const SMTP_TTL_MS = 3_000
const PROBE_TIMEOUT_MS = 2_000

const UP: DependencyStatus = { state: 'up' }

interface Cached {
  status: DependencyStatus
  at: number
  pending?: Promise<DependencyStatus>
}

const caches = new WeakMap<Runtime, Map<DependencyName, Cached>>()

function cacheOf(rt: Runtime): Map<DependencyName, Cached> {
  let cache = caches.get(rt)
  if (!cache) caches.set(rt, (cache = new Map()))
  return cache
}

/** Whether the database answers a probe now (not a cached answer). */
export async function databaseAnswersNow(rt: Runtime): Promise<boolean> {
  return withTimeout(ping(rt.store), 'the database').then(
    () => true,
    () => false,
  )
}

/** A question /readyz asked that got no answer within PROBE_TIMEOUT_MS (said so, with what may hold it). */
export class ProbeTimeoutError extends Error {}

/** `work`, or a ProbeTimeoutError naming `what` once PROBE_TIMEOUT_MS have passed: every question /readyz asks is bounded. */
export function withTimeout<T>(work: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new ProbeTimeoutError(`${what} did not answer within ${PROBE_TIMEOUT_MS} ms`)), PROBE_TIMEOUT_MS)
    timer.unref()
  })
  return Promise.race([work, deadline]).finally(() => clearTimeout(timer))
}

/** Connects to the relay and waits for its greeting, then says QUIT: no mail, no authentication. */
function probeSmtp(url: string): Promise<void> {
  const parsed = new URL(url)
  // nodemailer's default ports (src/reports/mail-transport.ts sends with it): the probe used 25 for smtp://, and said a
  // relay on 587 alone was down while mail went out through it (and the reverse).
  const port = Number(parsed.port || (parsed.protocol === 'smtps:' ? 465 : 587))
  return new Promise<void>((resolve, reject) => {
    const socket = connect(port, parsed.hostname)
    const done = (error?: Error) => {
      socket.removeAllListeners()
      socket.on('error', () => {})
      if (error) {
        socket.destroy()
        reject(error)
      } else {
        socket.end('QUIT\r\n')
        resolve()
      }
    }
    socket.setTimeout(PROBE_TIMEOUT_MS, () => done(new Error(`no greeting within ${PROBE_TIMEOUT_MS} ms`)))
    socket.once('error', (error) => done(error))
    // smtps:// speaks TLS first, so a greeting is not readable here; an accepted connection is enough.
    if (parsed.protocol === 'smtps:') socket.once('connect', () => done())
    else socket.once('data', (chunk: Buffer) => (chunk.toString('latin1').startsWith('220') ? done() : done(new Error(`unexpected greeting "${chunk.toString('latin1').slice(0, 40).trim()}"`))))
  })
}

let recipeScan: { dir: string; at: number; found: boolean } | undefined

/** True when a recipe in RECIPES_DIR mails (the daily report or ctx.mail.send); rescanned every 30 s. */
function mailingRecipeEnabled(rt: Runtime): boolean {
  const dir = rt.config.recipes.dir
  const now = Date.now()
  if (recipeScan && recipeScan.dir === dir && now - recipeScan.at < 30_000) return recipeScan.found
  const found = listRecipeFiles(dir).some((file) => recipeSendsMail(file))
  recipeScan = { dir, at: now, found }
  return found
}

/** Dependencies that apply to this configuration. */
export function dependencyNames(rt: Runtime): DependencyName[] {
  const names: DependencyName[] = ['database', 'upstream']
  if (rt.config.mail.smtpUrl && mailingRecipeEnabled(rt)) names.push('smtp')
  return names
}

async function probe(rt: Runtime, name: DependencyName): Promise<DependencyStatus> {
  try {
    if (name === 'database') await withTimeout(ping(rt.store), 'the database')
    else if (name === 'smtp') await withTimeout(probeSmtp(rt.config.mail.smtpUrl!), 'the SMTP relay')
    return UP
  } catch (error) {
    return { state: 'down', error: (error as Error).message }
  }
}

/** The status of one dependency: a cached probe result, or the provider's recent observed outcome. */
export async function checkDependency(rt: Runtime, name: DependencyName): Promise<DependencyStatus> {
  if (name === 'upstream') return upstreamStatus(rt)
  const cache = cacheOf(rt)
  const ttl = name === 'database' ? DATABASE_TTL_MS : SMTP_TTL_MS
  const cached = cache.get(name)
  const now = Date.now()
  if (cached && now - cached.at < ttl) return cached.status
  if (cached?.pending) return cached.pending
  const entry: Cached = cached ?? { status: UP, at: 0 }
  entry.pending = probe(rt, name).then((status) => {
    entry.status = status
    entry.at = Date.now()
    entry.pending = undefined
    return status
  })
  cache.set(name, entry)
  return entry.pending
}

export async function checkDependencies(rt: Runtime): Promise<Record<string, DependencyStatus>> {
  const names = dependencyNames(rt)
  const results = await Promise.all(names.map((n) => checkDependency(rt, n)))
  return Object.fromEntries(names.map((n, i) => [n, results[i]!]))
}

/** How /readyz shows a status. */
export function describeStatus(status: DependencyStatus): string {
  if (status.state === 'up') return 'up'
  if (status.state === 'down') return `down: ${status.error ?? 'not answering'}`
  return `unknown: no request to the provider in the last ${UPSTREAM_EVIDENCE_MS / 1000} s`
}

/**
 * `switchboard_dependency_up{dependency}`: 1 up, 0 down, refreshed at each scrape (probes cached); no
 * series while a dependency is unknown (an alert on `== 0` must not fire for a provider nobody called).
 * Also starts taking the processing thread's upstream outcomes: every role serving /readyz calls this.
 */
export function registerDependencyMetrics(rt: Runtime): void {
  watchUpstream(rt)
  if (rt.metrics.getSingleMetric('switchboard_dependency_up')) return
  new Gauge({
    name: 'switchboard_dependency_up',
    help: 'Whether a dependency answers (1) or not (0), absent while unknown: database, smtp (when a recipe mails), upstream (the provider, from recent requests)',
    labelNames: ['dependency'],
    registers: [rt.metrics],
    async collect() {
      const statuses = await checkDependencies(rt)
      this.reset()
      for (const [name, status] of Object.entries(statuses)) if (status.state !== 'unknown') this.set({ dependency: name }, status.state === 'up' ? 1 : 0)
    },
  })
}
