import { Registry, collectDefaultMetrics } from 'prom-client'
import { makeDatabaseDataDir, type Config } from './config/load.ts'
import { migrate, openStore, type Store } from './db/connect.ts'
import { FIRST_MIGRATION } from './db/migrations.ts'
import { shortSql } from './db/short-sql.ts'
import { explainOpenError } from './db/open-error.ts'
import { workspaceKey } from './config/workspace-key.ts'
import { createVoiceClient, type VoiceClient, type VoiceClientOptions } from './upstream/client.ts'
import { systemClock, type Clock } from './utils/clock.ts'
import { createLogger, type Logger } from './utils/logger.ts'
import { systemRandom, type Random } from './utils/random.ts'
import { createEventHooks, type EventHooks } from './events/hooks.ts'
import { recordUpstreamRequest } from './upstream/metrics.ts'

/**
 * Everything a feature needs, created once and passed down: configuration, storage, time, randomness,
 * logs, metrics and the event-hook registry. Tests build one with their own clock, random and store.
 */
export interface Runtime {
  /** Replaced once the server knows its port (PORT=0 in tests). */
  config: Config
  store: Store
  clock: Clock
  random: Random
  log: Logger
  metrics: Registry
  hooks: EventHooks
  /** Identifies this process among replicas (leases, claims). */
  instanceId: string
  /** A provider client with the workspace key (VOICE_API_KEY, or the sandbox's demo key). */
  workspaceClient(overrides?: Partial<VoiceClientOptions>): VoiceClient
  /** A provider client for a caller's key (the proxy). */
  clientFor(apiKey: string, overrides?: Partial<VoiceClientOptions>): VoiceClient
  /** Stops background work registered with `onClose` and closes the store. */
  close(): Promise<void>
  onClose(fn: () => Promise<void> | void): void
}

export interface RuntimeOverrides {
  clock?: Clock
  random?: Random
  log?: Logger
  store?: Store
  metrics?: Registry
  /** Skip migrations (the store is already migrated). */
  skipMigrate?: boolean
}

export async function createRuntime(config: Config, overrides: RuntimeOverrides = {}): Promise<Runtime> {
  const log = overrides.log ?? createLogger({ level: config.logLevel })
  const slowStatement = {
    ms: config.slowStatementMs,
    report: (sql: string, durationMs: number) => log.warn({ duration_ms: Math.round(durationMs), sql: shortSql(sql) }, 'slow database statement'),
  }
  let store: Store
  // A DATA_DIR this user may not create is said as DATA_DIR's, before the database in it fails to open.
  if (!overrides.store) makeDatabaseDataDir(config)
  try {
    store = overrides.store ?? (await openStore(config.databaseUrl, { slowStatement }))
  } catch (error) {
    throw explainOpenError(error, config.databaseUrl)
  }
  // Connections lost outside a query (database restart, network cut): the pool replaces them by itself.
  const unwatch = store.onConnectionError((error) => log.warn({ err: error.message }, 'database connection lost; reconnecting on next use'))
  if (!overrides.skipMigrate) {
    try {
      const { applied } = await migrate(store)
      // An upgrade by restart says what it changed in the schema (a new database, every migration applied, says nothing).
      if (applied.length > 0 && !applied.includes(FIRST_MIGRATION)) log.info({ migrations: applied }, `database migrated: ${applied.join(', ')}`)
    } catch (error) {
      // The first statement is where an unreachable Postgres shows (its pool connects on first use).
      unwatch()
      if (!overrides.store) await store.close().catch(() => {})
      throw explainOpenError(error, config.databaseUrl)
    }
  }
  const clock = overrides.clock ?? systemClock
  const random = overrides.random ?? systemRandom
  const metrics = overrides.metrics ?? new Registry()
  // prom-client's default metrics are already named process_* / nodejs_*: the prefix is only ours.
  if (!overrides.metrics) collectDefaultMetrics({ register: metrics, prefix: 'switchboard_' })
  const closers: Array<() => Promise<void> | void> = []
  const rt: Runtime = {
    config,
    store,
    clock,
    random,
    log,
    metrics,
    hooks: createEventHooks(),
    instanceId: `${process.pid}-${random.hex(4)}`,
    clientFor(apiKey, { onOutcome, ...extra } = {}) {
      return createVoiceClient({
        apiKey,
        baseUrl: rt.config.upstreamBaseUrl,
        timeoutMs: rt.config.upstreamTimeoutMs,
        clock,
        random,
        ...extra,
        // Every attempt of every client (call queue, recipes, reconciliation, the proxy's calls) tells /readyz
        // how the provider is doing, not only the proxy's own requests: a worker may be the only one calling it.
        onOutcome(outcome) {
          recordUpstreamRequest(rt, outcome)
          onOutcome?.(outcome)
        },
      })
    },
    workspaceClient(extra = {}) {
      return rt.clientFor(workspaceKey(rt.config), extra)
    },
    onClose(fn) {
      closers.push(fn)
    },
    async close() {
      for (const fn of closers.reverse()) await fn()
      closers.length = 0
      unwatch()
      if (!overrides.store) await store.close()
    },
  }
  return rt
}
