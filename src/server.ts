import { H3, serve } from 'h3'
import { ensureSandboxSecret, withListenPort, type Config, type LoadConfigOptions } from './config/load.ts'
import { resolveConfig } from './config/file.ts'
import { isMigrated, ping } from './db/connect.ts'
import { createRuntime, type Runtime, type RuntimeOverrides } from './runtime.ts'
import { startRecipes } from './recipes/background.ts'
import { registerRecipeRoutes } from './recipes/routes.ts'
import { registerWebhookRoutes, startWebhookWorkers } from './webhooks/index.ts'
import { mountProxy, startProxyMaintenance } from './proxy/mount.ts'
import { mountSandbox } from './sandbox/mount.ts'
import { registerOptOutHook } from './campaigns/opt-out-hook.ts'

/**
 * The HTTP surface: operations endpoints here, each feature's routes from its own module. Background
 * work (processing, reconciliation, schedules) starts only in `startServer`, so tests can drive a bare
 * app through `app.fetch` without timers.
 */
export function createApp(rt: Runtime): H3 {
  const app = new H3({
    onError(error) {
      const status = (error as { status?: number }).status ?? 500
      if (status >= 500) rt.log.error({ err: error }, 'unhandled error')
    },
  })

  app.get('/healthz', () => ({ status: 'ok' }))
  app.get('/readyz', async (event) => {
    try {
      await ping(rt.store)
      if (!(await isMigrated(rt.store))) throw new Error('migrations pending')
      return { status: 'ready', database: rt.store.dialect }
    } catch (error) {
      event.res.status = 503
      return { status: 'unavailable', error: (error as Error).message }
    }
  })
  app.get('/metrics', async (event) => {
    event.res.headers.set('content-type', rt.metrics.contentType)
    return rt.metrics.metrics()
  })

  // ── feature routes ──────────────────────────────────────────────────────────────────────────
  mountSandbox(app, rt)
  registerWebhookRoutes(app, rt)
  mountProxy(app, rt)
  registerRecipeRoutes(app, rt)
  registerOptOutHook(rt)
  return app
}

/** Starts each feature's background work; returns a function that stops it all. */
export async function startBackground(rt: Runtime): Promise<() => Promise<void>> {
  const stops: Array<() => Promise<void> | void> = []
  // ── feature background work ─────────────────────────────────────────────────────────────────
  stops.push(startWebhookWorkers(rt))
  stops.push(startProxyMaintenance(rt))
  stops.push(await startRecipes(rt))
  return async () => {
    for (const stop of stops.reverse()) await stop()
  }
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
  /** Print the start banner (default false; the CLI turns it on). */
  banner?: boolean
}

export async function startServer(options: StartOptions = {}): Promise<RunningServer> {
  const config = ensureSandboxSecret(options.config ?? (await resolveConfig(options)))
  const rt = await createRuntime(config, options.overrides)
  const app = createApp(rt)
  const server = serve(app, { port: config.port, hostname: config.host, silent: true, gracefulShutdown: false })
  await server.ready()
  const address = server.node?.server?.address()
  const port = typeof address === 'object' && address ? address.port : config.port
  rt.config = withListenPort(rt.config, port)
  const hostForUrl = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host
  const url = `http://${hostForUrl.includes(':') ? `[${hostForUrl}]` : hostForUrl}:${port}`
  const stopBackground = options.background === false ? async () => {} : await startBackground(rt)
  if (options.banner) process.stdout.write(renderBanner(rt.config, url))
  rt.log.info({ url, sandbox: rt.config.sandboxMode, database: rt.store.dialect }, 'switchboard ready')
  let closed = false
  return {
    url,
    port,
    rt,
    app,
    async close() {
      if (closed) return
      closed = true
      await stopBackground()
      await server.close(true)
      await rt.close()
    },
  }
}

export function renderBanner(config: Config, url: string): string {
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
      `    webhook receiver    ${url}/webhooks/formant   (signed with the secret in ${config.dataDir}/webhook-secret)`,
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
      `    webhook receiver    ${url}/webhooks/formant   (paste this URL into the provider dashboard)`,
      '',
    )
  }
  lines.push(`  Health: ${url}/healthz · readiness: ${url}/readyz · metrics: ${url}/metrics`, '', '')
  return lines.join('\n')
}
