import { accessSync, constants, existsSync, statfsSync, statSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { dataDirProblem } from '../config/data-dir-problem.ts'
import type { Config } from '../config/load.ts'
import { pendingMigrations, ping, type Store } from '../db/connect.ts'
import { describeLeftInSqlite, leftInSqlite } from '../db/left-in-sqlite.ts'
import { recipeEngineFor } from '../recipes/engine.ts'
import { isStranded, recipeQueueCounts, type QueueCounts } from '../recipes/queue-control.ts'
import { recipeSendsMail } from '../recipes/sends-mail.ts'
import { createMailTransport } from '../reports/mail-transport.ts'
import { describeMailError } from '../reports/mail-outbox.ts'
import type { Runtime } from '../runtime.ts'
import { VoiceApiError } from '../upstream/errors.ts'
import { DOCTOR_PROBE_ANSWER, DOCTOR_PROBE_BODY } from '../webhooks/doctor-probe.ts'
import { signFormant } from '../webhooks/verify.ts'
import { describeError, ok, problem, skipped, type CheckResult } from './check.ts'
import { localOrigin } from '../utils/local-origin.ts'
import { readLimited } from '../utils/read-limited.ts'
import { processUser } from '../utils/owner-and-mode.ts'
import { BLOCKED_FOLDER_FIX, blockedDataFolders } from '../utils/data-folders.ts'

/** Reachable and migrated (and, on Postgres, no SQLite database left in `dataDir` with what it lacks); the store is closed by the caller. `cli` is how hints name the CLI (src/utils/cli-name.ts). */
export async function checkDatabase(store: Store, cli = 'switchboard', dataDir?: string): Promise<CheckResult> {
  try {
    await ping(store)
  } catch (error) {
    // A wrong password or database name is an answer — the server refused — not silence.
    const code = (error as { code?: unknown } | null)?.code
    if (code === '28P01' || code === '28000' || code === '3D000') return problem('database', `${store.dialect} refused the connection: ${describeError(error)}`, 'check the user, password and database name in DATABASE_URL')
    return problem('database', `${store.dialect} does not answer: ${describeError(error)}`, 'check DATABASE_URL and that the database is up')
  }
  const { pending, total } = await pendingMigrations(store)
  if (pending.length > 0) {
    // A database an older version migrated says which of this version's migrations it lacks (before an upgrade, what
    // `migrate` will do); it said "not migrated" as of an empty one.
    const what = pending.length === total ? 'not migrated (switchboard never used it)' : `${total - pending.length} of ${total} migrations applied (an earlier version's): ${pending.join(', ')} pending`
    return problem('database', `${store.dialect} is reachable, ${what}`, `run: ${cli} migrate (serve also migrates at start-up)`)
  }
  if (dataDir !== undefined) {
    const left = await leftInSqlite(dataDir, store)
    if (left) {
      const { problem: what, fix } = describeLeftInSqlite(left, cli)
      return problem('database', what, fix)
    }
  }
  return ok('database', `${store.dialect} reachable, migrations applied`)
}

export async function checkRecipes(rt: Runtime, cli = 'switchboard'): Promise<CheckResult> {
  const recipes = await recipeEngineFor(rt).list()
  const broken = recipes.filter((r) => r.broken)
  if (broken.length > 0) {
    const first = broken[0]!
    return problem('recipes', `${broken.length} of ${recipes.length} do not load: ${first.name}: ${first.broken}`, `fix ${first.file} (see: ${cli} recipes list)`)
  }
  // Events waiting for a recipe that nothing runs any more — its file removed, or its `on` taken out (the database may
  // not be migrated yet: then there is no queue to look at).
  const queues = await recipeQueueCounts(rt).catch(() => new Map<string, QueueCounts>())
  const stranded = [...queues].filter(([name, q]) => isStranded(recipes.find((r) => r.name === name), q))
  if (stranded.length > 0) {
    const [name, q] = stranded[0]!
    const why = recipes.some((r) => r.name === name) ? `takes no events now` : `is no longer in ${rt.config.recipes.dir}`
    const more = stranded.length > 1 ? ` (and ${stranded.length - 1} more such recipes)` : ''
    return problem('recipes', `"${name}" ${why} but ${q.queued} events still wait for it, and nothing runs them${more}`, `give them up: ${cli} recipes discard ${name} (or put its file or "on" back)`)
  }
  return ok('recipes', recipes.length ? `${recipes.length} load (${recipes.map((r) => r.name).join(', ')})` : `none in ${rt.config.recipes.dir}`)
}


/** Connect + EHLO (+ AUTH) through nodemailer's verify(), when mail would go over SMTP for a report. */
export async function checkSmtp(rt: Runtime): Promise<CheckResult> {
  if (!rt.config.mail.smtpUrl) return skipped('smtp', `SMTP_URL is not set: mail is written to ${rt.config.dataDir}/outbox`)
  const reports = (await recipeEngineFor(rt).list()).filter((r) => !r.broken && recipeSendsMail(r.file))
  if (reports.length === 0) return skipped('smtp', 'no recipe sends mail')
  const { transporter } = createMailTransport(rt.config)
  const host = new URL(rt.config.mail.smtpUrl).host
  try {
    await transporter.verify()
    return ok('smtp', `${host} accepts connections (for ${reports.map((r) => r.name).join(', ')})`)
  } catch (error) {
    // As the mail log says it: a relay that quotes what it was sent (`535 Invalid credentials for user:password`) put
    // SMTP_URL's password on the screen — the output people paste into a ticket.
    return problem('smtp', `${host}: ${describeMailError(error, rt.config.mail.smtpUrl)}`, 'check SMTP_URL (host, port, user:password, smtp:// or smtps://) and that the relay is up')
  } finally {
    transporter.close()
  }
}

/** True when the service answers on its own port: checks that go through it need it running. */
export async function serviceIsUp(config: Config, fetcher: typeof fetch = fetch): Promise<boolean> {
  try {
    const res = await fetcher(`${localUrl(config)}/healthz`, { signal: AbortSignal.timeout(3_000) })
    return res.ok
  } catch {
    return false
  }
}

/** The running service's address as seen from this machine. */
export function localUrl(config: Config): string {
  return localOrigin(config.host, config.port)
}

/** The workspace key is accepted: one cheap authenticated GET through the typed client. */
export async function checkUpstreamKey(rt: Runtime, serviceUp: boolean): Promise<CheckResult> {
  if (rt.config.sandboxMode && !serviceUp) return skipped('upstream key', `sandbox mode: the provider is the service's embedded sandbox, and the service is not running at ${localUrl(rt.config)}`)
  const client = rt.workspaceClient({ timeoutMs: 10_000, retry: { retries: 0 } })
  const who = rt.config.sandboxMode ? 'the sandbox demo key' : 'VOICE_API_KEY'
  try {
    await client.listConversations({ limit: 1 })
    return ok('upstream key', `${who} is accepted by ${rt.config.upstreamBaseUrl}`)
  } catch (error) {
    if (error instanceof VoiceApiError && error.status === 401) {
      return problem('upstream key', `${who} is refused by ${rt.config.upstreamBaseUrl} (401)`, 'copy the workspace key from the provider dashboard into VOICE_API_KEY')
    }
    // A 429 is the provider answering this key: the address and the key work, its limit is spent for now (replicas
    // whose call queues share the key spend it routinely). /readyz counts it as up too.
    if (error instanceof VoiceApiError && error.status === 429) {
      return ok('upstream key', `${who} is accepted by ${rt.config.upstreamBaseUrl} (its rate limit is spent right now: 429)`)
    }
    const fix = rt.config.sandboxMode ? 'see the service log' : 'check VOICE_API_REGION / VOICE_API_BASE_URL and the network path to the provider'
    return problem('upstream key', `${rt.config.upstreamBaseUrl} did not answer usefully: ${describeError(error)}`, fix)
  }
}

/**
 * The webhook URL reaches the running receiver and the secret matches: a probe signed with the default target's
 * secret (src/webhooks/doctor-probe.ts). The receiver verifies the signature first, then answers the probe 200 and
 * stores and counts nothing. A receiver before 0.25.3 (a rolling deploy) answers it 400 "event id missing", which
 * proves the same — and counts there as one rejection.
 */
export async function checkWebhookUrl(rt: Runtime, serviceUp: boolean, fetcher: typeof fetch = fetch): Promise<CheckResult> {
  const url = `${localUrl(rt.config)}/webhooks/formant`
  if (!serviceUp) return skipped('webhook url', `service not running at ${localUrl(rt.config)}: start it (npm start), then run doctor again — or, if it runs with another PORT or HOST, run doctor with the same`)
  const secret = rt.config.webhook.secrets[0]
  if (!secret) return skipped('webhook url', 'the default target has no secret (WEBHOOK_ALLOW_UNSIGNED)')
  const body = DOCTOR_PROBE_BODY
  let res: Response
  try {
    res = await fetcher(url, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json', 'x-formantai-signature': signFormant(body, secret), 'x-formantai-timestamp': String(Math.floor(rt.clock.now() / 1000)) },
      signal: AbortSignal.timeout(10_000),
    })
  } catch (error) {
    return problem('webhook url', `${url} cannot be reached: ${describeError(error)}`, 'check HOST/PORT and that the service is running')
  }
  // The probe's answer is a few dozen bytes: whatever listens on PORT, no more than a KB of it is read.
  let probeAnswered = false
  if (res.status === 200) {
    const read = await readLimited(res.body, 1024, { overflow: 'cancel' }).catch(() => undefined)
    probeAnswered = read?.ok === true && new TextDecoder().decode(read.bytes) === DOCTOR_PROBE_ANSWER
  } else await res.body?.cancel()
  if (probeAnswered || res.status === 400) return ok('webhook url', `${url} answers and accepts this secret (${rt.config.webhook.secretSource ?? 'WEBHOOK_SECRET'})`)
  if (res.status === 401) {
    return problem('webhook url', `${url} refused a delivery signed with ${rt.config.webhook.secretSource ?? 'WEBHOOK_SECRET'}`, 'give doctor and the service the same WEBHOOK_SECRET (and DATA_DIR)')
  }
  // A switchboard worker answers /readyz with its role and nothing under /webhooks: it is not another program.
  if (res.status === 404 && (await roleAt(localUrl(rt.config), fetcher)) === 'worker') {
    return skipped('webhook url', `${localUrl(rt.config)} is a switchboard worker (--role worker), which receives no webhooks: run doctor with a receiver's PORT to check the webhook URL`)
  }
  return problem('webhook url', `${url} answered ${res.status}, not a switchboard receiver`, 'check PORT: another program may be listening there')
}

/** The role a switchboard process at `origin` reports on /readyz, if it answers as one. */
async function roleAt(origin: string, fetcher: typeof fetch): Promise<string | undefined> {
  try {
    const res = await fetcher(`${origin}/readyz`, { signal: AbortSignal.timeout(3_000) })
    const body = (await res.json()) as { role?: unknown }
    return typeof body.role === 'string' ? body.role : undefined
  } catch {
    return undefined
  }
}

/** Below this much free space where DATA_DIR is, doctor calls it a problem: a full disk refuses every webhook (503). */
export const MIN_FREE_BYTES = 100 * 1024 * 1024

/**
 * The free space where DATA_DIR is (the SQLite file, the mail outbox, recordings and batch files live there): a full
 * disk stops storing webhooks — every delivery answered 503 — and the running service says so on /readyz, which doctor
 * reported as "no problems found".
 */
export function checkDisk(dataDir: string, minFreeBytes = MIN_FREE_BYTES): CheckResult {
  if (!existsSync(dataDir)) return skipped('disk', `${dataDir} does not exist yet: the first start makes it`)
  let free: number
  try {
    const stats = statfsSync(dataDir)
    free = stats.bavail * stats.bsize
  } catch (error) {
    return skipped('disk', `cannot read the free space of ${dataDir}: ${describeError(error)}`)
  }
  const shown = formatBytes(free)
  if (free < minFreeBytes) {
    return problem('disk', `${shown} free where DATA_DIR is (${dataDir}): when it is full, every webhook is refused (503) until space is freed`, 'free disk space there, or move DATA_DIR to a larger disk (README → Operations)')
  }
  return ok('disk', `${shown} free where DATA_DIR is (${dataDir})`)
}

/** Whether this user may list, read and write in DATA_DIR and each of its folders that exists (src/utils/data-folders.ts). */
export function checkDataFolders(dataDir: string): CheckResult {
  if (!existsSync(dataDir)) {
    // Made at the first start, if it can be: what serve would refuse with (a parent this user may not write in, a file
    // where a folder should be) is said now — it said "the first start makes it" and "no problems found".
    const cannot = uncreatableDataDir(dataDir)
    if (cannot) return problem('folders', cannot, 'create DATA_DIR for this user, or set it to a folder this user may create (README → Operations → Data)')
    return skipped('folders', `${dataDir} does not exist yet: the first start makes it`)
  }
  const [first, ...rest] = blockedDataFolders(dataDir)
  if (!first) return ok('folders', `this user (${processUser()}) may write in DATA_DIR and its folders`)
  const more = rest.length > 0 ? `; also ${rest.map((f) => f.path).join(', ')}` : ''
  return problem('folders', `this user (${processUser()}) may not write in ${first.path}${first.owned ? ` (${first.owned})` : ''}: ${first.what}${more}`, BLOCKED_FOLDER_FIX)
}

/** Why DATA_DIR, which does not exist, cannot be made by this user (serve's own words), or undefined when it can. */
function uncreatableDataDir(dataDir: string): string | undefined {
  let missing = resolve(dataDir)
  let parent = dirname(missing)
  while (parent !== missing && !existsSync(parent)) {
    missing = parent
    parent = dirname(parent)
  }
  try {
    if (!statSync(parent).isDirectory()) return dataDirProblem({ code: 'ENOTDIR', path: missing }, dataDir)
    accessSync(parent, constants.W_OK | constants.X_OK)
    return undefined
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    return dataDirProblem({ code: code === 'EROFS' ? 'EROFS' : 'EACCES', path: missing }, dataDir)
  }
}

function formatBytes(bytes: number): string {
  const units = ['bytes', 'KB', 'MB', 'GB', 'TB']
  let value = bytes
  let unit = 0
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024
    unit++
  }
  return unit === 0 ? `${value} bytes` : `${value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}`
}

/**
 * What the running service says of itself (/readyz): `unavailable` — the database down, migrations pending, the last
 * webhook not stored (a full disk) — is a problem, with its reason; `degraded` is said (the checks above name the
 * dependency); skipped when the service is not running.
 */
export async function checkService(rt: Runtime, serviceUp: boolean, fetcher: typeof fetch = fetch): Promise<CheckResult> {
  const origin = localUrl(rt.config)
  if (!serviceUp) return skipped('service', `not running at ${origin}`)
  let res: Response
  let body: { status?: unknown; error?: unknown; reason?: unknown; dependencies?: unknown }
  try {
    res = await fetcher(`${origin}/readyz`, { signal: AbortSignal.timeout(5_000) })
    body = (await res.json()) as typeof body
  } catch (error) {
    return problem('service', `${origin}/readyz did not answer: ${describeError(error)}`, 'see the service log')
  }
  const status = typeof body.status === 'string' ? body.status : `HTTP ${res.status}`
  if (res.status === 503 || status === 'unavailable') {
    return problem('service', `${origin} is not ready: ${typeof body.error === 'string' ? body.error : status}`, 'see its log and README → Operations → What happens when…')
  }
  // Processing behind (BACKLOG_DEGRADED_SECONDS): no other check says it.
  if (status === 'degraded' && typeof body.reason === 'string') {
    return problem('service', `${origin} is degraded: ${body.reason}`, 'see the processing side: its log, /metrics (switchboard_events_pending), README → Operations')
  }
  if (status === 'degraded' && body.dependencies && typeof body.dependencies === 'object') {
    const down = Object.entries(body.dependencies as Record<string, unknown>).filter(([, v]) => typeof v === 'string' && v.startsWith('down')).map(([name]) => name)
    return ok('service', `${origin} is up, degraded${down.length ? ` (${down.join(', ')} down)` : ''}`)
  }
  return ok('service', `${origin} is ${status}`)
}
