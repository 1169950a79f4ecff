import { existsSync, readFileSync, statSync } from 'node:fs'
import { makePrivateDir } from '../utils/private-dir.ts'
import { randomBytes } from 'node:crypto'
import { dirname, isAbsolute, join, resolve } from 'node:path'
import type { z } from 'zod'
import { REGION_BASE_URLS } from '../upstream/regions.ts'
import { didYouMean, unknownKey } from '../utils/did-you-mean.ts'
import { localOrigin } from '../utils/local-origin.ts'
import { shownUrl } from '../utils/shown-url.ts'
import { writeSecretFile } from '../utils/write-secret-file.ts'
import { secretFileProblem, type KeptSecret } from './secret-file-problem.ts'
import { dataDirProblem } from './data-dir-problem.ts'
import { parseDatabaseUrl } from '../db/database-url.ts'
import { printable } from '../utils/printable.ts'
import { knownKeysAt } from './known-keys.ts'
import { envSchema, type EnvInput, type WebhookTargetConfig, type SandboxFaults } from './schema.ts'
import { destinationEventsProblem, type DestinationConfig } from './destinations.ts'

export interface Config {
  port: number
  host: string
  dataDir: string
  databaseUrl: string
  /** Statements at least this slow are logged (`slow database statement`); 0: never. */
  slowStatementMs: number
  logLevel: string
  /** True when no VOICE_API_KEY is set: the embedded sandbox is the provider. */
  sandboxMode: boolean
  voiceApiKey: string | undefined
  /** Provider base address without the /v1 suffix. In sandbox mode, filled in once the port is known. */
  upstreamBaseUrl: string
  upstreamTimeoutMs: number
  /** The switchboard.config.ts that was loaded, if any. */
  configFile: string | undefined
  /**
   * Call history — conversations, the calls switchboard placed, the mail log — kept this many days past its end
   * (HISTORY_RETENTION_DAYS); 0 keeps it for good.
   */
  history: { retentionDays: number }
  webhook: {
    secrets: string[]
    /** Where the default target's secret comes from, for the start banner; undefined when there is none. */
    secretSource: string | undefined
    toleranceSeconds: number
    maxBytes: number
    allowUnsigned: boolean
    targets: Record<string, WebhookTargetConfig>
    retentionDays: number
    maxAttempts: number
    reconcileIntervalSeconds: number
  }
  /** The event pipeline: recipe event batches and runs, the paced call queue, the backlog readiness threshold. */
  pipeline: {
    recipeTimeoutMs: number
    recipeBatchMax: number
    recipeBatchWaitMs: number
    callConcurrency: number
    /** Scheduling priority (Linux nice, 0–19) of the processing thread under `serve`: the receiver goes first. */
    processingNice: number
    /** Deliveries a second at the receiver above which the processing thread holds back; and above half that while the receiver's loop is saturated (0: never). */
    processingYieldAbove: number
    backlogDegradedMs: number
  }
  adminToken: string | undefined
  /** Forwarding (src/destinations). */
  destinations: { list: DestinationConfig[]; allowPrivate: boolean }
  proxy: {
    keyWindowSeconds: number
    cacheMaxBytes: number
    recordingsMaxBytes: number
    maxUploadBytes: number
  }
  mail: { smtpUrl: string | undefined; from: string; reportTo: string[] }
  /** `typeCheck`: recipes with type errors are reported broken (RECIPES_TYPECHECK). */
  recipes: { dir: string; timezone: string; typeCheck: boolean }
  defaultCountry: string
  sandbox: {
    speed: number
    faults: SandboxFaults
    rateLimit: number
    numberLimit: number
    maxCalls: number
  }
}

/** Start-up refuses a bad setting with one line naming it. */
export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    detail: string,
  ) {
    super(`Invalid configuration: ${variable} ${detail}`)
    this.name = 'ConfigError'
  }
}

/**
 * Settings whose value is or may hold a secret, never echoed: the key, secrets and tokens, the SMTP URL (its
 * password), and the JSON of webhook targets and destinations (their secrets; malformed, it is still theirs).
 */
const holdsSecret = (variable: string) =>
  /SECRET|TOKEN|SMTP|PASSWORD|_KEY$/.test(variable) || variable === 'DESTINATIONS' || variable === 'WEBHOOK_TARGETS'

/** A refused value as an error may show it: undefined for a secret; a URL without its credentials. */
function shownValue(variable: string, raw: string): string | undefined {
  if (holdsSecret(variable)) return undefined
  if (!variable.endsWith('_URL')) return raw
  // DATABASE_URL and the like carry a password: `postgres://admin:pw@db/app` shows as `postgres://***@db/app`, and
  // `postgres//admin:pw@db` (no URL at all) as `***@db`.
  const masked = shownUrl(raw)
  // A query string can carry the password too (`?password=…`); the mistake shown is never in it.
  const query = masked.indexOf('?')
  return query === -1 ? masked : `${masked.slice(0, query)}?…`
}

/** What a kind zod expected is called in a configuration error. */
const KIND_NAMES: Record<string, string> = {
  string: 'text (a string in quotes)',
  number: 'a number',
  int: 'a whole number',
  boolean: 'true or false',
  object: 'an object ({ … })',
  record: 'an object ({ name: … })',
  array: 'a list ([ … ])',
}

function describeIssue(issue: z.core.$ZodIssue, input: Record<string, unknown>): ConfigError {
  const variable = String(issue.path[0] ?? 'configuration')
  if (issue.code === 'unrecognized_keys') {
    const at = issue.path.length > 1 ? `at ${issue.path.slice(1).join('.')} ` : ''
    return new ConfigError(variable, `${at}has an ${unknownKey(issue.keys[0]!, knownKeysAt(envSchema, issue.path))}`)
  }
  const raw = input[variable]
  // A discriminated union (a webhook target's `scheme`) that found no discriminator: most often a misspelled key
  // (`schema`), which is the mistake to name, with a guess, rather than "Invalid discriminator value".
  const [, name, discriminator] = issue.path
  if (issue.code === 'invalid_union' && issue.path.length === 3 && name !== undefined && discriminator !== undefined) {
    const entry = entryAt(raw, name)
    // The values the union takes, from zod's own message ("… Expected 'formant' | 'standard' | 'hmac'").
    const values = [...issue.message.matchAll(/'([^']+)'/g)].map((m) => m[1]).join(', ')
    const at = `at ${String(name)} `
    if (entry && !(String(discriminator) in entry)) {
      const known = knownKeysAt(envSchema, issue.path.slice(0, 2))
      const unknown = Object.keys(entry).find((key) => !known.includes(key))
      if (unknown !== undefined) return new ConfigError(variable, `${at}has an ${unknownKey(unknown, known)}`)
      return new ConfigError(variable, `${at}needs a ${String(discriminator)}${values ? `: one of ${values}` : ''}`)
    }
    if (entry && values) {
      const got = entry[String(discriminator)]
      return new ConfigError(variable, `${at}${String(discriminator)} must be one of ${values}${typeof got === 'string' ? ` (got "${got.slice(0, 40)}")` : ''}`)
    }
  }
  // A nested problem is located by its path; the whole value (JSON that may hold secrets) is not echoed.
  // A config file's value of the wrong kind is shown too (`got null`, `got true`), never a secret's.
  let shown = ''
  // A list refused for one of its entries (REPORT_TO's `bob` of `ops@example.com, bob`) shows that entry.
  const entry = issue.code === 'custom' && typeof issue.params?.['entry'] === 'string' ? issue.params['entry'] : undefined
  if (entry !== undefined && !holdsSecret(variable)) {
    shown = ` (got "${printable(entry, 60)}")`
  } else if (issue.path.length === 1 && typeof raw === 'string') {
    const value = shownValue(variable, raw)
    // Shown on the one line of the error: a line break or an escape sequence in the value is shown escaped.
    if (value !== undefined) shown = ` (got "${printable(value, 60)}")`
  } else if (issue.path.length === 1 && !holdsSecret(variable) && (raw === null || typeof raw === 'number' || typeof raw === 'boolean')) {
    shown = ` (got ${String(raw)})`
  }
  const sub = issue.path.length > 1 ? ` at ${issue.path.slice(1).join('.')}` : ''
  // An enum's own message ("Invalid option: expected one of …") as the rest of these read.
  let message = issue.code === 'invalid_value' && issue.values.length > 1 ? `must be one of ${issue.values.map(String).join(', ')}` : issue.message
  // A config file's value of the wrong kind, in the words the rest use ("must be …"), not zod's "Invalid input: expected string".
  if (issue.code === 'invalid_type' && issue.message.startsWith('Invalid input')) {
    message = `must be ${KIND_NAMES[issue.expected] ?? issue.expected}`
    if (!shown && issue.path.length === 1) shown = Array.isArray(raw) ? ' (got a list)' : raw !== null && typeof raw === 'object' ? ' (got an object)' : ''
  }
  return new ConfigError(variable, `${message}${sub}${shown}`)
}

/** The object `raw` (JSON text from the environment, or the config file's value) holds under `key`, if any. */
function entryAt(raw: unknown, key: PropertyKey): Record<string, unknown> | undefined {
  let value = raw
  if (typeof raw === 'string') {
    try {
      value = JSON.parse(raw)
    } catch {
      return undefined
    }
  }
  const entry = typeof value === 'object' && value !== null ? (value as Record<PropertyKey, unknown>)[key] : undefined
  return typeof entry === 'object' && entry !== null && !Array.isArray(entry) ? (entry as Record<string, unknown>) : undefined
}

export interface LoadConfigOptions {
  /** Environment to read (defaults to process.env). Empty strings count as unset. */
  env?: Record<string, string | undefined>
  /** Values from switchboard.config.ts; the environment overrides them. */
  file?: Partial<Record<keyof EnvInput, unknown>>
  /** Where `file` came from, to name it in errors. */
  fileName?: string
  cwd?: string
  /** A RECIPES_DIR set but absent is no mistake to the caller: it makes the folder (`recipes new`). */
  createsRecipesDir?: boolean
}

/** Whether `path` is a directory, a file or other non-directory, or nothing at all. */
function pathKind(path: string): 'directory' | 'other' | 'missing' {
  try {
    return statSync(path).isDirectory() ? 'directory' : 'other'
  } catch {
    return 'missing'
  }
}

/** Reads and validates the configuration. Throws ConfigError on the first bad setting. */
export function loadConfig(options: LoadConfigOptions = {}): Config {
  const cwd = options.cwd ?? process.cwd()
  const env = options.env ?? process.env
  const known = Object.keys(envSchema.shape)
  // The config file is ours alone (unlike the environment), so a key the schema does not have is a
  // mistake — usually a typo that would otherwise leave the setting at its default without a word.
  for (const key of Object.keys(options.file ?? {})) {
    if (known.includes(key)) continue
    const guess = didYouMean(key, known)
    throw new ConfigError(key, `is not a setting${options.fileName ? ` (in ${options.fileName})` : ''}${guess ? `; did you mean ${guess}?` : ''}`)
  }
  const input: Record<string, unknown> = { ...(options.file ?? {}) }
  for (const key of known) {
    const value = env[key]
    if (value === undefined || value === '') continue
    // Said once for every variable (README → Configuration): lists and JSON settings dropped the blanks and took
    // `SANDBOX_FAULTS=' '` or `WEBHOOK_SECRET=' '` as unset, without a word.
    if (!value.trim()) throw new ConfigError(key, 'is blank (only spaces): leave it empty or unset for its default, or give it a value')
    input[key] = value
  }
  const parsed = envSchema.safeParse(input)
  if (!parsed.success) throw describeIssue(parsed.error.issues[0]!, input)
  const e = parsed.data
  const dataDir = isAbsolute(e.DATA_DIR) ? e.DATA_DIR : resolve(cwd, e.DATA_DIR)
  const recipesDir = isAbsolute(e.RECIPES_DIR) ? e.RECIPES_DIR : resolve(cwd, e.RECIPES_DIR)
  // DATA_DIR is made when missing, but a file in its place could never hold the database or the outbox.
  if (pathKind(dataDir) === 'other') throw new ConfigError('DATA_DIR', `is not a directory: ${dataDir}`)
  // Set on purpose but absent is a mistake (a typo in a path); the default folder may be missing (no recipes).
  if (input.RECIPES_DIR !== undefined) {
    const kind = pathKind(recipesDir)
    if (kind === 'missing' && !options.createsRecipesDir) throw new ConfigError('RECIPES_DIR', `does not exist: ${recipesDir} (create the folder first, e.g. mkdir -p ${recipesDir})`)
    if (kind === 'other') throw new ConfigError('RECIPES_DIR', `is not a directory: ${recipesDir}`)
  }
  const sandboxMode = !e.VOICE_API_KEY
  const upstreamBaseUrl = (e.VOICE_API_BASE_URL ?? REGION_BASE_URLS[e.VOICE_API_REGION]).replace(/\/+$/, '').replace(/\/v1$/, '')
  for (const [name, target] of Object.entries(e.WEBHOOK_TARGETS)) {
    if (target.secrets.length === 0 && !e.WEBHOOK_ALLOW_UNSIGNED) {
      throw new ConfigError('WEBHOOK_TARGETS', `target "${name}" has no secret (set one, or WEBHOOK_ALLOW_UNSIGNED=true)`)
    }
  }
  // Here rather than in DESTINATIONS' schema: whether `crm:*` can match anything depends on WEBHOOK_TARGETS.
  const eventsProblem = destinationEventsProblem(e.DESTINATIONS, e.WEBHOOK_TARGETS)
  if (eventsProblem) throw new ConfigError('DESTINATIONS', eventsProblem)
  if (!sandboxMode && e.WEBHOOK_SECRET.length === 0 && !e.WEBHOOK_ALLOW_UNSIGNED) {
    throw new ConfigError('WEBHOOK_SECRET', 'is required when VOICE_API_KEY is set (or set WEBHOOK_ALLOW_UNSIGNED=true)')
  }
  return {
    port: e.PORT,
    host: e.HOST,
    dataDir,
    databaseUrl: e.DATABASE_URL ?? `sqlite:${join(dataDir, 'switchboard.db')}`,
    slowStatementMs: e.DB_SLOW_STATEMENT_MS,
    logLevel: e.LOG_LEVEL,
    sandboxMode,
    voiceApiKey: e.VOICE_API_KEY,
    // Commands that talk to a running service's sandbox use this: a wildcard HOST is not an address to connect to.
    upstreamBaseUrl: sandboxMode ? `${localOrigin(e.HOST, e.PORT)}/sandbox` : upstreamBaseUrl,
    upstreamTimeoutMs: e.UPSTREAM_TIMEOUT_MS,
    configFile: options.fileName,
    history: { retentionDays: e.HISTORY_RETENTION_DAYS },
    webhook: {
      secrets: e.WEBHOOK_SECRET,
      secretSource:
        e.WEBHOOK_SECRET.length === 0
          ? undefined
          : env.WEBHOOK_SECRET
            ? 'WEBHOOK_SECRET from the environment'
            : `WEBHOOK_SECRET in ${options.fileName ?? 'the config file'}`,
      toleranceSeconds: e.WEBHOOK_TOLERANCE_SECONDS,
      maxBytes: e.WEBHOOK_MAX_BYTES,
      allowUnsigned: e.WEBHOOK_ALLOW_UNSIGNED,
      targets: e.WEBHOOK_TARGETS,
      retentionDays: e.EVENT_RETENTION_DAYS,
      maxAttempts: e.PROCESSING_MAX_ATTEMPTS,
      reconcileIntervalSeconds: e.RECONCILE_INTERVAL_SECONDS,
    },
    pipeline: {
      recipeTimeoutMs: e.RECIPE_TIMEOUT_SECONDS * 1000,
      recipeBatchMax: e.RECIPE_BATCH_MAX,
      recipeBatchWaitMs: e.RECIPE_BATCH_WAIT_MS,
      callConcurrency: e.CALL_QUEUE_CONCURRENCY,
      processingNice: e.PROCESSING_NICE,
      processingYieldAbove: e.PROCESSING_YIELD_ABOVE,
      backlogDegradedMs: e.BACKLOG_DEGRADED_SECONDS * 1000,
    },
    adminToken: e.ADMIN_TOKEN,
    destinations: { list: e.DESTINATIONS, allowPrivate: e.ALLOW_PRIVATE_DESTINATIONS },
    proxy: {
      keyWindowSeconds: e.PROXY_KEY_WINDOW_SECONDS,
      cacheMaxBytes: e.PROXY_CACHE_MAX_BYTES,
      recordingsMaxBytes: e.PROXY_RECORDINGS_MAX_BYTES,
      maxUploadBytes: e.PROXY_MAX_UPLOAD_BYTES,
    },
    mail: { smtpUrl: e.SMTP_URL, from: e.MAIL_FROM, reportTo: e.REPORT_TO },
    recipes: { dir: recipesDir, timezone: e.RECIPES_TIMEZONE, typeCheck: e.RECIPES_TYPECHECK },
    defaultCountry: e.DEFAULT_COUNTRY,
    sandbox: {
      speed: e.SANDBOX_SPEED,
      faults: e.SANDBOX_FAULTS,
      rateLimit: e.SANDBOX_RATE_LIMIT,
      numberLimit: e.SANDBOX_NUMBER_LIMIT,
      maxCalls: e.SANDBOX_MAX_CALLS,
    },
  }
}

/**
 * Makes DATA_DIR, private (src/utils/private-dir.ts), where it is not there yet; where this user may not, one line
 * naming it, whose folder is in the way and the ways out — exit 2 for a command, a refusal to start for serve.
 */
export function makeDataDir(dataDir: string): void {
  try {
    makePrivateDir(dataDir)
  } catch (error) {
    const problem = dataDirProblem(error, dataDir)
    throw problem ? new ConfigError('DATA_DIR', problem) : error
  }
}

/**
 * Before the SQLite database DATA_DIR holds (the default DATABASE_URL) is opened: DATA_DIR made as the setting it is,
 * so a folder this user may not create is said as DATA_DIR's, exit 2, as `serve` says it — not as a database that
 * would not open (exit 1). A database elsewhere (Postgres, a DATABASE_URL of its own) makes no DATA_DIR here.
 */
export function makeDatabaseDataDir(config: Pick<Config, 'dataDir' | 'databaseUrl'>): void {
  const { dialect, location } = parseDatabaseUrl(config.databaseUrl)
  if (dialect === 'sqlite' && location !== ':memory:' && dirname(location) === resolve(config.dataDir)) makeDataDir(config.dataDir)
}

/**
 * Runs one step on a secret switchboard keeps in DATA_DIR (reading it, or creating it): a file-system error becomes one
 * ConfigError line for its setting — the file, what is wrong, the ways out (src/config/secret-file-problem.ts). The
 * file belongs to whoever first started the service here, and another user meets its mode, or the folder's.
 */
export function onKeptSecret<T>(kept: Omit<KeptSecret, 'doing'>, doing: KeptSecret['doing'], step: () => T): T {
  try {
    return step()
  } catch (error) {
    const problem = secretFileProblem(error, { ...kept, doing })
    throw problem ? new ConfigError(kept.setting, problem) : error
  }
}

/**
 * In sandbox mode with no WEBHOOK_SECRET, a secret is generated once and kept in DATA_DIR so restarts
 * keep verifying the sandbox's deliveries.
 */
export function ensureSandboxSecret(config: Config, options: { create?: boolean } = {}): Config {
  if (!config.sandboxMode || config.webhook.secrets.length > 0) return config
  const file = join(config.dataDir, 'webhook-secret')
  // A command that only looks (doctor) reads the secret a service made, and makes none of its own.
  if (options.create === false && !existsSync(file)) return config
  makeDataDir(config.dataDir)
  // Another user's file (or folder) is one line naming it and the ways out — exit 2 for a command, a refusal to start for serve.
  const kept = { setting: 'WEBHOOK_SECRET', keeps: 'sandbox mode keeps a secret of its own', file, dataDir: config.dataDir }
  let secret = onKeptSecret(kept, 'read', () => (existsSync(file) ? readFileSync(file, 'utf8').trim() : ''))
  if (!secret) {
    const made = `whsec_${randomBytes(24).toString('hex')}`
    onKeptSecret(kept, 'create', () => writeSecretFile(file, made))
    secret = made
  }
  return { ...config, webhook: { ...config.webhook, secrets: [secret], secretSource: `the secret kept in ${file}` } }
}

/** Sets the sandbox upstream to the port the server actually bound (PORT=0 picks a free one). */
export function withListenPort(config: Config, port: number): Config {
  if (!config.sandboxMode) return { ...config, port }
  return { ...config, port, upstreamBaseUrl: `${localOrigin(config.host, port)}/sandbox` }
}
