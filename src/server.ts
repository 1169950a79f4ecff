import { H3, type H3Event } from 'h3'
import { ConfigError, ensureSandboxSecret, withListenPort, type Config, type LoadConfigOptions } from './config/load.ts'
import { resolveConfig } from './config/file.ts'
import { readiness } from './health/readiness.ts'
import { ProbeTimeoutError, registerDependencyMetrics, withTimeout } from './health/dependencies.ts'
import { createRuntime, type Runtime, type RuntimeOverrides } from './runtime.ts'
import { startWalCheckpoints } from './wal-checkpoints.ts'
import type { Checkpointer } from './db/checkpointer.ts'
import { startBackground } from './background.ts'
import type { Role } from './roles.ts'
import { registerConsumers } from './pipeline.ts'
import { registerRecipeRoutes } from './recipes/routes.ts'
import { registerWebhookRoutes } from './webhooks/index.ts'
import { mountProxy } from './proxy/mount.ts'
import { mountSandbox } from './sandbox/mount.ts'
import { registerAdminGate } from './ui/gate.ts'
import { ADMIN_RESPONSE_HEADERS, setResponseHeaders } from './utils/admin-auth.ts'
import { isNoRoute, noRouteResponse } from './utils/no-route.ts'
import { internalErrorResponse, logUnhandledError } from './utils/unhandled-error.ts'
import { serviceErrorResponse } from './utils/service-error.ts'
import { registerUi } from './ui/index.ts'
import { adminTokenFile, ensureAdminToken, markAdminTokenShown, type AdminTokenSource } from './config/admin-token.ts'
import { isMalformedPath, malformedPathAnswer } from './upstream/malformed-path.ts'
import { setUiHeaders } from './ui/security-headers.ts'
import { serveApp } from './utils/serve-app.ts'
import { registerDestinationRoutes } from './destinations/index.ts'
import { inboxBacklog } from './webhooks/backlog.ts'
import { registerBacklogMetrics } from './backlog-metrics.ts'
import { canRunInThread, startProcessingThread, type ProcessingThread } from './processing-host.ts'
import { explainListenError } from './utils/listen-error.ts'
import { localOrigin } from './utils/local-origin.ts'
import { cliName } from './utils/cli-name.ts'
import { describeLeftInSqlite, leftInSqlite } from './db/left-in-sqlite.ts'
import { BLOCKED_FOLDER_FIX, blockedDataFolders } from './utils/data-folders.ts'
import { processUser } from './utils/owner-and-mode.ts'
import { proxyCacheResults } from './proxy/metrics.ts'


/** Per-process hooks the operations endpoints read (the processing thread's metrics, when there is one). */
interface OpsState {
  role: Role
  thread?: ProcessingThread
  /** True until processing (thread or inline) has started: the receiver already accepts meanwhile. */
  starting?: boolean
}

/** What `/readyz` says of processing: `none` on a receiver; `starting` while it loads; `restarting` after its thread died. */
function processingState(state: OpsState): 'none' | 'starting' | 'running' | 'restarting' {
  if (state.role === 'receiver') return 'none'
  if (state.starting) return 'starting'
  if (state.thread) return state.thread.running() ? 'running' : 'restarting'
  return 'running'
}
const opsStates = new WeakMap<Runtime, OpsState>()
const opsState = (rt: Runtime): OpsState => {
  let state = opsStates.get(rt)
  if (!state) opsStates.set(rt, (state = { role: 'all' }))
  return state
}

/** Events counted on the receiver's event loop at most (/readyz, and /metrics while no processing thread reports them). */
const RECEIVER_COUNT_UP_TO = 10_000

/** How long the receiver's loop reuses its count of the recipe queues and outboxes (src/backlog-metrics.ts). */
const QUEUES_MAX_AGE_MS = 30_000

/** /healthz, /readyz and /metrics: every role serves them. */
function registerOpsRoutes(app: H3, rt: Runtime): void {
  registerBacklogMetrics(rt, {
    role: () => opsState(rt).role,
    // `serve`'s processing thread counts the backlog on its own connection and event loop (src/processing-thread.ts);
    // a receiver's task thread counts none.
    reportedElsewhere: () => opsState(rt).role !== 'receiver' && opsState(rt).thread?.reportsMetrics() === true,
    // A process that receives webhooks counts only so far on its own loop; a worker's loop can afford the full count.
    countUpTo: opsState(rt).role === 'worker' ? undefined : RECEIVER_COUNT_UP_TO,
    // Processing on this loop (inline, or --role worker) counts its recipe queues and outboxes; a receiver leaves them to it.
    // So does a process whose processing thread is not reporting (busy past the metrics wait, or restarting).
    processingQueues: () => opsState(rt).role !== 'receiver' && opsState(rt).thread?.reportsMetrics() !== true,
    // Counted here only while the thread does not answer: a count a few scrapes old, rather than one per scrape on the
    // loop that answers webhooks. Where processing runs on this loop (a worker, inline), at every scrape.
    queuesMaxAgeMs: () => (opsState(rt).thread ? QUEUES_MAX_AGE_MS : 0),
  })
  app.get('/healthz', () => ({ status: 'ok' }))
  registerDependencyMetrics(rt)
  app.get('/readyz', async (event) => {
    // Dependencies first (database down → 503; relay or provider down → degraded), then the backlog.
    const ready = await readiness(rt)
    event.res.status = ready.httpStatus
    if (ready.httpStatus !== 200) return ready.body
    const state = opsState(rt)
    const role = state.role
    let backlog: Awaited<ReturnType<typeof inboxBacklog>>
    try {
      // Bounded as every question /readyz asks: a lock on the inbox (ALTER TABLE, VACUUM FULL) held the answer for as
      // long as it lasted, and then said "ready" — while every webhook meanwhile was answered 503.
      backlog = await withTimeout(inboxBacklog(rt, { countUpTo: RECEIVER_COUNT_UP_TO }), 'the inbox (webhook_events)')
    } catch (error) {
      event.res.status = 503
      const message = (error as Error).message
      const said = error instanceof ProbeTimeoutError ? `${message} (is the table locked? webhooks cannot be stored meanwhile)` : `reading the inbox failed: ${message}`
      // Not the probe's `up` of a few seconds ago beside it.
      const dependencies = { ...(ready.body.dependencies as Record<string, string>), database: `down: ${said}` }
      return { ...ready.body, status: 'unavailable', error: said, dependencies }
    }
    const threshold = rt.config.pipeline.backlogDegradedMs
    // Whole seconds, as shown and as compared: degraded at 10.1 s said "10 s old (BACKLOG_DEGRADED_SECONDS=10)".
    const ageSeconds = Math.floor(backlog.oldestAgeMs / 1000)
    const counted = { pending: backlog.pending, ...(backlog.capped ? { pending_counted_up_to: RECEIVER_COUNT_UP_TO } : {}), oldest_age_seconds: ageSeconds }
    const body = { ...ready.body, role, processing: processingState(state), backlog: counted }
    // Still 200: the receiver keeps accepting (taking it out of rotation would lose deliveries); degraded
    // tells the operator that processing is behind (BACKLOG_DEGRADED_SECONDS).
    if (ageSeconds * 1000 > threshold) {
      return { ...body, status: 'degraded', reason: `the oldest unprocessed event is ${ageSeconds} s old (BACKLOG_DEGRADED_SECONDS=${threshold / 1000})` }
    }
    return body
  })
  app.get('/metrics', async (event) => {
    event.res.headers.set('content-type', rt.metrics.contentType)
    const thread = opsState(rt).thread
    return thread ? thread.metrics() : rt.metrics.metrics()
  })
}

/** The worker role's HTTP surface: operations endpoints only. */
export function createOpsApp(rt: Runtime): H3 {
  const app = new H3({
    // Unhandled errors are logged once, as JSON, by onError: not also printed by h3 as a stack trace.
    silent: true,
    onError(error, event) {
      if (isNoRoute(error)) return noRouteResponse(event.req.method, event.url.pathname)
      if (error.status >= 500) {
        logUnhandledError(rt.log, error, event)
        return internalErrorResponse(event.url.pathname)
      }
      return serviceErrorResponse(error.status, error.message, error.headers)
    },
  })
  registerOpsRoutes(app, rt)
  return app
}

/** Headers an answer of onError's own needs: h3 does not add the ones set for the request to a Response from onError. */
function withRequestHeaders(answer: Response, event: H3Event): Response {
  for (const [name, value] of event.res.headers) if (!answer.headers.has(name)) answer.headers.set(name, value)
  return answer
}

/**
 * The HTTP surface: operations endpoints here, each feature's routes from its own module. Background
 * work (processing, reconciliation, schedules) starts only in `startServer`, so tests can drive a bare
 * app through `app.fetch` without timers.
 */
export function createApp(rt: Runtime): H3 {
  const app = new H3({
    // Unhandled errors are logged once, as JSON, by onError: not also printed by h3 as a stack trace.
    silent: true,
    onError(error, event) {
      const status = error.status ?? 500
      const path = event.url.pathname
      // Errors raised before any middleware (a path h3 cannot decode) miss the gate's headers: set them here.
      if (/^\/(ui|admin)(\/|$)/i.test(path)) setResponseHeaders(event, ADMIN_RESPONSE_HEADERS)
      if (status === 400 && isMalformedPath(path)) {
        // The proxy and the sandbox in the provider's shape; the receiver, /admin and the dashboard in the service's,
        // which is the same body (uncached, as their other errors) — the dashboard's with its page headers (CSP,
        // framing, referrer), as every answer under /ui has them: h3's own answer went out without them.
        if (/^\/(sandbox\/)?v1(\/|$)/.test(path)) {
          const answer = malformedPathAnswer(path)
          if (path.startsWith('/v1')) {
            answer.headers.set('x-cache', 'BYPASS')
            // Counted as every proxy answer is by its X-Cache (src/proxy/mount.ts): this one never reached its route.
            proxyCacheResults(rt.metrics).inc({ result: 'BYPASS' })
          }
          return answer
        }
        if (/^\/ui(\/|$)/i.test(path)) setUiHeaders(event)
        const answer = malformedPathAnswer(path)
        answer.headers.set('cache-control', 'no-store')
        return withRequestHeaders(answer, event)
      }
      // No route at all: the one error shape every other answer uses, not h3's own (which echoed the request's Host).
      // With the headers the middleware set for the path (the dashboard's CSP and framing, no caching under /admin).
      if (isNoRoute(error)) return withRequestHeaders(noRouteResponse(event.req.method, path), event)
      if (status >= 500) {
        logUnhandledError(rt.log, error, event)
        return withRequestHeaders(internalErrorResponse(path), event)
      }
      // A refusal no route answered itself (the dashboard's to htmx and to a client that is not a browser, a missing
      // asset): the service's error shape with the error's own headers (HX-Refresh, Connection: close), not h3's body.
      return withRequestHeaders(serviceErrorResponse(status, error.message, error.headers), event)
    },
  })

  // Before every route: /admin and /ui need the token or a session, whoever registers the route.
  registerAdminGate(app, rt)

  registerOpsRoutes(app, rt)

  // ── feature routes ──────────────────────────────────────────────────────────────────────────
  mountSandbox(app, rt)
  registerWebhookRoutes(app, rt)
  mountProxy(app, rt)
  registerRecipeRoutes(app, rt)
  registerUi(app, rt)
  registerDestinationRoutes(app, rt)
  registerConsumers(rt)
  return app
}

export interface RunningServer {
  url: string
  port: number
  rt: Runtime
  app: H3
  close(): Promise<void>
}

export interface StartOptions extends LoadConfigOptions {
  config?: Config
  overrides?: RuntimeOverrides
  /** Start background work (default true). */
  background?: boolean
  /** Default `all`. */
  role?: Role
  /** For `all`: processing in a worker thread (the CLI) or inline on the HTTP event loop (default). */
  processing?: 'thread' | 'inline'
  /**
   * For a processing thread: how long it may be silent before the watchdog restarts it (default: 5 s past the
   * recipe time limit, 10 s to 60 s). Not a setting: tests shorten it rather than wait 10 s of real time.
   */
  processingWatchdogMs?: number

  /** Print the start banner (default false; the CLI turns it on). */
  banner?: boolean
}

export async function startServer(options: StartOptions = {}): Promise<RunningServer> {
  // The admin token always exists: ADMIN_TOKEN, or one generated into DATA_DIR (shown once in the banner).
  const { config, source: adminTokenSource } = ensureAdminToken(ensureSandboxSecret(options.config ?? (await resolveConfig(options))))
  const role = options.role ?? 'all'
  // The sandbox lives in the memory of the process that serves it (all, receiver): a worker on its own would send its
  // calls to a /sandbox on its own port that is not there, and every queued call would end rejected with a 404.
  if (role === 'worker' && config.sandboxMode) {
    throw new ConfigError(
      'VOICE_API_KEY',
      'is needed by serve --role worker: in sandbox mode the sandbox lives in the process that serves it (--role all or receiver), which a worker cannot reach; run --role all, or give every role VOICE_API_KEY and VOICE_API_BASE_URL (the provider, or a standalone `cli sandbox`)',
    )
  }
  const rt = await createRuntime(config, options.overrides)
  opsState(rt).role = role
  const app = role === 'worker' ? createOpsApp(rt) : createApp(rt)
  const server = serveApp(app, { port: config.port, hostname: config.host })
  try {
    await server.ready()
  } catch (error) {
    await rt.close()
    throw explainListenError(error, { host: config.host, port: config.port })
  }
  const address = server.node?.server?.address()
  const port = typeof address === 'object' && address ? address.port : config.port
  rt.config = withListenPort(rt.config, port)
  const url = localOrigin(config.host, port)
  let stopBackground: () => Promise<void> = async () => {}
  let checkpoints: Checkpointer | undefined
  try {
    if (options.background !== false) {
      opsState(rt).starting = true
      // `worker` too: its own loop then only answers /healthz, /readyz and /metrics, and the thread's watchdog restarts
      // processing held by a recipe that never yields (on the loop itself, nothing could). `receiver` too: its thread
      // processes nothing but runs the recipe code and the heavy reads its dashboard and admin API ask for.
      const threaded = options.processing === 'thread' && canRunInThread(rt)
      // SQLite: checkpoints on a thread of their own; every connection of the service only as a backstop.
      checkpoints = startWalCheckpoints(rt)
      let stopWork: () => Promise<void>
      if (threaded) {
        const stopOwn = role !== 'worker' ? await startBackground(rt, { role: 'receiver' }) : async () => {}
        const thread = await startProcessingThread(rt, { role, ...(options.processingWatchdogMs !== undefined ? { unresponsiveAfterMs: options.processingWatchdogMs } : {}) }).catch(async (error: unknown) => {
          await stopOwn()
          throw error
        })
        opsState(rt).thread = thread
        stopWork = async () => {
          await thread.stop()
          await stopOwn()
        }
      } else stopWork = await startBackground(rt, { role })
      stopBackground = async () => {
        await stopWork()
        await checkpoints?.close()
      }
      opsState(rt).starting = false
    }
  } catch (error) {
    // Never a half-started service: a listener with nothing behind it would accept events nobody processes.
    await checkpoints?.close()
    await server.close(true)
    await rt.close()
    throw error
  }
  if (options.banner) {
    const banner = { adminTokenSource, terminal: Boolean(process.stdout.isTTY) }
    process.stdout.write(renderBanner(rt.config, url, banner))
    if (showsAdminToken(banner)) markAdminTokenShown(rt.config.dataDir)
  }
  rt.log.info({ url, role, sandbox: rt.config.sandboxMode, database: rt.store.dialect, processing: role === 'receiver' ? 'none' : opsState(rt).thread ? 'thread' : 'inline' }, 'switchboard ready')
  // A folder of DATA_DIR this user may not write in (made by a command run as another user), said at start rather than
  // at the first report mailed to the outbox or the first batch file parked in inbox/failed/ (doctor says it too).
  for (const folder of blockedDataFolders(rt.config.dataDir)) {
    rt.log.warn({ folder: folder.path, ...(folder.owned ? { owner_mode: folder.owned } : {}) }, `this user (${processUser()}) may not write in ${folder.path}: ${folder.what} — ${BLOCKED_FOLDER_FIX}`)
  }
  // A move to Postgres that left the SQLite database's do-not-call list and history behind, said at every start.
  const left = await leftInSqlite(rt.config.dataDir, rt.store)
  if (left) {
    const { problem, fix } = describeLeftInSqlite(left, cliName(process.env))
    rt.log.warn({ file: left.file, left: left.kinds }, `${problem} — ${fix}`)
  }
  let closed = false
  return {
    url,
    port,
    rt,
    app,
    async close() {
      if (closed) return
      closed = true
      // The requests in flight first (a webhook's commit, a proxied call): they need the runtime, and background work
      // goes on meanwhile; then the work in the background; then the runtime.
      await server.shutdown()
      await stopBackground()
      await rt.close()
    },
  }
}

/** Named webhook targets and the config file, when there are any: what a user set beyond the defaults. */
function sourceLines(config: Config, url: string): string[] {
  const lines = Object.entries(config.webhook.targets).map(([name, target]) => `    webhook target      ${url}/webhooks/${name}   (${target.scheme})`)
  if (config.configFile) lines.push(`    config file         ${config.configFile}`)
  return lines
}

export interface BannerOptions {
  adminTokenSource?: AdminTokenSource
  /**
   * Whether the banner goes to a terminal. A generated admin token is shown only there: under systemd, Docker or
   * any pipe, stdout is a log, and a secret does not belong in one — the banner then names the file instead.
   */
  terminal?: boolean
}

/** Whether the banner prints the admin token: one no banner has shown yet, to a terminal. */
function showsAdminToken(options: BannerOptions): boolean {
  return (options.adminTokenSource === 'generated' || options.adminTokenSource === 'unshown') && Boolean(options.terminal)
}

export function renderBanner(config: Config, url: string, options: BannerOptions = {}): string {
  const lines = [
    '',
    `  switchboard is running at ${url}`,
    '',
  ]
  if (config.sandboxMode) {
    lines.push(
      '  Sandbox mode: no VOICE_API_KEY is set, so the embedded sandbox provider answers every call.',
      `    sandbox provider    ${url}/sandbox/v1`,
      `    proxy (use this)    ${url}/v1`,
      `    webhook receiver    ${url}/webhooks/formant   (signed with ${config.webhook.secretSource ?? 'no secret'})`,
      ...sourceLines(config, url),
      '    demo API keys       sk_test_acme (agents 101, 102, 103) · sk_test_globex (agent 201) · sk_test_disabled (401)',
      '',
      '  Place a call (numbers ending 0-4 complete, 5 no_answer, 6 busy, 7 failed, 8 unreachable, 9 socket_failure):',
      '',
      `    curl -s ${url}/v1/call -H 'Authorization: Bearer sk_test_acme' -H 'Content-Type: application/json' \\`,
      `      -d '{"agent_id":101,"parameters":[{"name":"customer_phone","value":"+919876543210"}]}'`,
      '',
    )
  } else {
    lines.push(
      `    provider            ${config.upstreamBaseUrl}`,
      `    proxy               ${url}/v1`,
      // This address is where switchboard listens; the provider needs the public HTTPS one in front of it (it refuses
      // local-only URLs): pasted as shown, the provider refused it.
      `    webhook receiver    ${url}/webhooks/formant   (verified with ${config.webhook.secretSource ?? 'no secret'})`,
      `                        in the provider dashboard: https://<your-host>/webhooks/formant, your reverse proxy's public address for this one (README → The webhook URL for the provider dashboard)`,
      ...sourceLines(config, url),
      '',
    )
  }
  lines.push(`  Dashboard: ${url}/ui   (log in with the admin token)`)
  if (showsAdminToken(options) && config.adminToken) {
    const made = options.adminTokenSource === 'generated' ? 'generated now' : 'generated by an earlier start that did not come up'
    lines.push(`    admin token         ${config.adminToken}`, `                        (${made} and shown only this once; kept in ${adminTokenFile(config.dataDir)})`)
  } else if (options.adminTokenSource === 'generated') {
    lines.push(`    admin token         generated now into ${adminTokenFile(config.dataDir)}   (not printed: this output is not a terminal)`)
  } else if (options.adminTokenSource === 'unshown') {
    lines.push(`    admin token         in ${adminTokenFile(config.dataDir)}   (not printed: this output is not a terminal)`)
  } else if (options.adminTokenSource === 'file') {
    lines.push(`    admin token         in ${adminTokenFile(config.dataDir)}`)
  } else if (options.adminTokenSource === 'config') {
    lines.push('    admin token         the value of ADMIN_TOKEN')
  }
  lines.push(`  Health: ${url}/healthz · readiness: ${url}/readyz · metrics: ${url}/metrics`, '', '')
  return lines.join('\n')
}
