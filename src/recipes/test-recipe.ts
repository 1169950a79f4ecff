import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync } from 'node:fs'
import { unreadableFileProblem } from '../utils/unreadable-file.ts'
import { tmpdir } from 'node:os'
import { Writable } from 'node:stream'
import { basename, dirname, join, resolve } from 'node:path'
import { z } from 'zod'
import { WEBHOOK_EVENT_TYPES, webhookEventSchema, type WebhookEvent } from '../upstream/schemas.ts'
import type { PlannedEffect } from '../effects.ts'
import { ArgumentError, checkArgument } from '../utils/argument-error.ts'
import type { PipelineEvent } from '../events/hooks.ts'
import type { RecipeTrigger } from './define.ts'
import { formatDiagnostic, type RecipeDiagnostic } from './diagnostic.ts'
import { findRecipeFile } from './find-recipe-file.ts'
import { csvFileProblem } from './csv-fixture.ts'
import { copyServiceDnc } from './service-dnc.ts'
import { createTypeVerdicts, installationTypeCacheFile } from './type-verdicts.ts'
import { isZonedIsoDateTime } from '../utils/iso-datetime.ts'

/**
 * `testRecipe()`: runs one recipe in a dry run against fixture events or a contacts CSV, on a frozen
 * clock, with a throw-away data folder (its own SQLite file, empty do-not-call list) — no provider and no
 * running service needed. What `recipes test` prints, and what an author's own vitest test asserts on.
 */
export interface TestRecipeOptions {
  /** A recipe name in RECIPES_DIR (or `recipesDir`), or a path to a recipe file. */
  recipe: string
  /**
   * Webhook events as the provider sends them (`{ event_id, event_type, timestamp, data: { call, … } }`),
   * or the path of a JSON file holding a list of them. They are applied to the conversations read model
   * and delivered together as one event trigger (`ctx.trigger.events`). An event of a named target (for a recipe
   * on `'crm:contact.updated'`) is given as `{ target: 'crm', event_type, body, event_id?, timestamp? }` and
   * reaches the recipe as a `TargetEvent`.
   */
  events?: Array<WebhookEvent | TestTargetEvent> | string
  /**
   * A contacts CSV (path), copied to `$DATA_DIR/inbox/` and `$DATA_DIR/inbox/<recipe>/` of the test's data folder (where batch
   * recipes read) under its own name: a file named `*.csv`, as batch recipes read no other (src/recipes/csv-fixture.ts).
   */
  csv?: string
  /** The frozen clock (ISO 8601, epoch ms or Date). Default: a minute after the last event, else now. */
  now?: string | number | Date
  /** Configuration (DEFAULT_COUNTRY, RECIPES_TIMEZONE, REPORT_TO, …); default process.env. DATA_DIR is always a temp folder. */
  env?: Record<string, string | undefined>
  /**
   * The least level `log` keeps. Default: LOG_LEVEL of the `env` given, else `info` — not the process's LOG_LEVEL, which
   * a test runner sets for its own quiet (the checkout's vitest sets `silent`: every test's `log` came back empty).
   */
  logLevel?: TestRecipeLogLevel
  /** Where recipe names are looked up; default RECIPES_DIR. */
  recipesDir?: string
  /**
   * Checks numbers against the service's do-not-call list — the `dnc.csv` in its DATA_DIR and the `dnc` table of its
   * database, copied (read only) into the test's — as `recipes test` does. Default false: a test of the team's
   * recipes sees only the numbers it sets up (`dnc.csv` in the test's folder is empty), whatever a checkout has stored.
   */
  serviceDnc?: boolean
}

/** An event of a named target (WEBHOOK_TARGETS) as a test gives it. */
export interface TestTargetEvent {
  target: string
  event_type: string
  body: unknown
  /** Default: `<target>_test_<n>`. */
  event_id?: string
  /** When it was received, ISO 8601; default: the frozen clock's time. */
  timestamp?: string
}

function isTestTargetEvent(event: WebhookEvent | TestTargetEvent): event is TestTargetEvent {
  return 'target' in event && typeof event.target === 'string'
}

const targetEventSchema = z.strictObject({
  target: z.string().regex(/^[a-z0-9][a-z0-9_-]{0,62}$/i, { error: 'must be a target name (WEBHOOK_TARGETS)' }).refine((t) => t !== 'formant', { error: 'formant is the provider: give its events as the provider sends them' }),
  event_type: z.string().min(1),
  body: z.unknown(),
  event_id: z.string().min(1).optional(),
  timestamp: z.string().refine(isZonedIsoDateTime, { error: 'must be an ISO 8601 time with its zone' }).optional(),
})

export interface TestRecipeResult {
  recipe: string
  /**
   * `not_run`: the recipe runs on events alone (an `on`, no schedule) and none of the events given is one its `on`
   * lists — the service would not run it for them.
   */
  status: 'succeeded' | 'failed' | 'not_run'
  /** Why the run failed (the recipe threw). */
  error: string | null
  /** What `run` returned. */
  result: unknown
  /** The frozen clock, ISO 8601. */
  now: string
  /** How the recipe was started: `event` with --events, `cron` (a tick at `now`) for a scheduled recipe, else `manual`. */
  trigger: 'event' | 'cron' | 'manual'
  /** Calls (with scheduled_for and retry_context), batches (rows and rejects) and mails the run planned. */
  plan: PlannedEffect[]
  /** Things worth knowing, e.g. an event type the recipe does not list in `on`, or a type check that could not run. */
  warnings: string[]
  /** What the run logged (`ctx.log`, and the run's own errors) at `logLevel` (default info), in order. */
  log: TestRecipeLogLine[]
}

export interface TestRecipeLogLine {
  level: 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal'
  msg: string
  /** The line's other fields (`ctx.log.info({ id }, 'msg')` → `{ id }`), when it has any. */
  fields?: Record<string, unknown>
}

const LEVELS: Record<number, TestRecipeLogLine['level']> = { 10: 'trace', 20: 'debug', 30: 'info', 40: 'warn', 50: 'error', 60: 'fatal' }
/** Fields every line of a run carries, and the runner's own closing line (the result says as much). */
const RUN_FIELDS = new Set(['level', 'time', 'msg', 'recipe', 'run_id', 'trigger', 'dry_run'])
const RUNNER_LINES = new Set(['recipe run succeeded', 'recipe run failed'])

/** A log destination that keeps a run's lines as TestRecipeLogLine. */
function collectLog(into: TestRecipeLogLine[]): Writable {
  return new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const text of chunk.toString('utf8').split('\n')) {
        if (!text.trim()) continue
        const line = JSON.parse(text) as Record<string, unknown>
        const msg = typeof line.msg === 'string' ? line.msg : ''
        if (RUNNER_LINES.has(msg)) continue
        const fields = Object.fromEntries(Object.entries(line).filter(([key]) => !RUN_FIELDS.has(key)))
        into.push({ level: LEVELS[Number(line.level)] ?? 'info', msg, ...(Object.keys(fields).length ? { fields } : {}) })
      }
      done()
    },
  })
}

const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const
export type TestRecipeLogLevel = (typeof LOG_LEVELS)[number]

const optionsSchema = z.strictObject({
  recipe: z.string().min(1, { error: 'must name the recipe' }),
  events: z.union([z.string(), z.array(z.unknown())]).optional(),
  csv: z.string().optional(),
  now: z.union([z.string(), z.number(), z.date()]).optional(),
  // process.env is an exotic object zod's record() refuses; any object of strings will do.
  env: z.custom<Record<string, string | undefined>>((v) => typeof v === 'object' && v !== null, { error: 'must be an object of variables' }).optional(),
  recipesDir: z.string().optional(),
  serviceDnc: z.boolean().optional(),
  logLevel: z.enum(LOG_LEVELS, { error: `must be one of ${LOG_LEVELS.join(', ')}` }).optional(),
})

/** A file of events: a list, or `{ events: [...] }`; each checked as a provider webhook event, or a named target's. */
export function readEventsFile(path: string): Array<WebhookEvent | TestTargetEvent> {
  let parsed: unknown
  try {
    // A byte-order mark (editors on Windows write one) is not part of the JSON.
    parsed = JSON.parse(readFileSync(path, 'utf8').replace(/^\uFEFF/, ''))
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    // Another user's file (or one in their folder): whose it is and the ways out, not a bare EACCES.
    const unreadable = code === 'EACCES' || code === 'EPERM' ? unreadableFileProblem(path) : undefined
    if (unreadable) throw new ArgumentError(`events file ${unreadable}`)
    // JSON.parse quotes the text around the mistake, line breaks included: shown escaped, so the line is whole.
    const why = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'is a folder, not a file' : (error as Error).message.replace(/\r/g, '\\r').replace(/\n/g, '\\n')
    throw new ArgumentError(`events file ${path}: ${why}`)
  }
  return parseEvents(parsed, path)
}

function parseEvents(value: unknown, where: string): Array<WebhookEvent | TestTargetEvent> {
  const wrapped = typeof value === 'object' && value !== null && !Array.isArray(value) && 'events' in value
  if (!Array.isArray(value) && !wrapped) {
    throw new ArgumentError(`testRecipe(events (${where})): expected a JSON list of webhook events, or { "events": [ … ] }`)
  }
  const list = Array.isArray(value) ? value : (value as { events?: unknown }).events
  // An entry with a `target` is a named target's event; any other, the provider's.
  const isTarget = (item: unknown) => typeof item === 'object' && item !== null && 'target' in item
  return checkArgument(z.array(z.unknown()).min(1, { error: 'must hold at least one event' }), list, {
    fn: 'testRecipe',
    arg: `events (${where})`,
    expected: 'a list of events',
  }).map((item, i) => {
    const schema = isTarget(item) ? targetEventSchema : webhookEventSchema
    return checkArgument(schema, item, {
      fn: 'testRecipe',
      arg: `events (${where})[${i}]`,
      expected: isTarget(item)
        ? 'a named target\'s event { target, event_type, body, event_id?, timestamp? }'
        : `a webhook event { event_id, event_type (${WEBHOOK_EVENT_TYPES[0]}, …), timestamp, data: { call: { … } } }`,
    }) as WebhookEvent | TestTargetEvent
  })
}

function instantOf(value: string | number | Date): number {
  // Text must be an ISO 8601 time with its zone: Date.parse reads "1" or "March 7" as a day in 2001.
  const at = value instanceof Date ? value.getTime() : typeof value === 'number' ? value : isZonedIsoDateTime(value) ? Date.parse(value) : NaN
  if (!Number.isFinite(at)) throw new ArgumentError(`testRecipe(now): "${String(value)}" is not an ISO 8601 time with a zone, e.g. 2026-03-01T10:00:00+05:30`)
  return at
}

export async function testRecipe(input: TestRecipeOptions): Promise<TestRecipeResult> {
  const options = checkArgument(optionsSchema, input, { fn: 'testRecipe', arg: 'options', expected: '{ recipe, events?, csv?, now?, env?, recipesDir?, serviceDnc?, logLevel? }' })
  // Loaded here, not at import: the public API (what recipes import) stays light.
  const [{ resolveConfig }, { createRuntime }, { openMigratedMemoryStore }, { createFrozenClock }, { createLogger }, { applyEventToReadModel }, { loadRecipeFile }, { executeRun }, { pendingRow }, { subscribes }, { cliLoadWatch }, { optOutFromEvent }] = await Promise.all([
    import('../config/file.ts'),
    import('../runtime.ts'),
    import('../db/connect.ts'),
    import('../utils/clock.ts'),
    import('../utils/logger.ts'),
    import('../webhooks/read-model.ts'),
    import('./loader.ts'),
    import('./runner.ts'),
    import('../webhooks/inbox.ts'),
    import('./event-dispatch.ts'),
    import('./cli-watchdog.ts'),
    import('../campaigns/dnc.ts'),
  ])
  const env = options.env ?? process.env
  // Before the recipe is loaded and type-checked (seconds): a contacts file it cannot be given is the command's mistake.
  const csvProblem = options.csv === undefined ? undefined : csvFileProblem(options.csv)
  if (csvProblem) throw new ArgumentError(`testRecipe(csv): ${csvProblem}`)
  const events = options.events === undefined ? [] : typeof options.events === 'string' ? readEventsFile(options.events) : parseEvents(options.events, 'argument')
  const lastEvent = events.reduce((max, e) => Math.max(max, isTestTargetEvent(e) ? 0 : Date.parse(e.data.call.ended_at ?? '') || 0, Date.parse(e.timestamp ?? '') || 0), 0)
  const now = options.now !== undefined ? instantOf(options.now) : lastEvent ? lastEvent + 60_000 : Date.now()

  const dataDir = mkdtempSync(join(tmpdir(), 'sb-recipe-test-'))
  const removeDataDir = () => rmSync(dataDir, { recursive: true, force: true })
  // Also when the process ends inside the test: `recipes test`'s watchdog ends a recipe that never returns with
  // process.exit, which runs no `finally`.
  process.once('exit', removeDataDir)
  try {
    // The configuration the service would run with — the environment over switchboard.config.ts (SWITCHBOARD_CONFIG,
    // else the working directory's) — but for where it keeps its data.
    const config = await resolveConfig({
      env: {
        ...env,
        DATA_DIR: dataDir,
        // Where it would be; the runtime below is given an in-memory database of its own instead (a migrated copy).
        DATABASE_URL: `sqlite:${join(dataDir, 'test.db')}`,
        WEBHOOK_SECRET: env.WEBHOOK_SECRET || 'whsec_recipe_test',
      },
    })
    const file = findRecipeFile(options.recipe, options.recipesDir ?? config.recipes.dir)
    // Judged as the service judges it: an `on` naming a target WEBHOOK_TARGETS does not configure is broken there.
    // As the CLI's `recipes test`: told to the command's watchdog, which names a file whose top-level code never returns.
    const loaded = await loadRecipeFile(file, config.recipes.timezone, { targets: config.webhook.targets, watch: cliLoadWatch() })
    if (!loaded.definition) throw new ArgumentError(`recipe "${loaded.name}" is broken: ${loaded.error ?? 'not loaded'}`)
    // The service never runs a recipe with a type error (unless RECIPES_TYPECHECK=false): a test that passed one
    // would promise a run that never happens.
    const warnings: string[] = []
    if (config.recipes.typeCheck) {
      const verdict = await firstTypeError(file)
      if (verdict.ok && verdict.diagnostic) throw new ArgumentError(`recipe "${loaded.name}" is broken: type error at ${formatDiagnostic(verdict.diagnostic)}`)
      if (!verdict.ok) warnings.push(`could not type-check the recipe (${verdict.error}); it ran unchecked, as the service runs recipes it cannot check`)
    }
    if (options.csv) {
      // Into inbox/ (the shipped nightly-batch's folder) and inbox/<recipe>/ (the folder of a recipe made with
      // `recipes new <name> --from batch`): a batch recipe finds it in either.
      for (const dir of [join(dataDir, 'inbox'), join(dataDir, 'inbox', loaded.name)]) {
        mkdirSync(dir, { recursive: true })
        const copy = join(dir, basename(options.csv))
        copyFileSync(options.csv, copy)
        // Dated well before the frozen clock: the copy is whole, and a batch recipe leaves a file modified in the last
        // minute for its next run (it may still be arriving) — with the clock at "now", a fresh copy was never read.
        const settled = new Date(now - 10 * 60_000)
        utimesSync(copy, settled, settled)
      }
    }
    // The type check is done above; nothing in this runtime should start the service's own checker thread.
    const logged: TestRecipeLogLine[] = []
    const log = createLogger({ level: options.logLevel ?? (options.env?.LOG_LEVEL || 'info'), destination: collectLog(logged) })
    const database = await openMigratedMemoryStore()
    const rt = await createRuntime({ ...config, recipes: { ...config.recipes, typeCheck: false } }, { clock: createFrozenClock(now), log, store: database, skipMigrate: true }).catch(async (error: unknown) => {
      await database.close()
      throw error
    })
    try {
      if (options.serviceDnc) {
        // The numbers the service would refuse: its do-not-call list (file and table), read from where it keeps its data.
        const service = await resolveConfig({ env })
        const dncWarning = await copyServiceDnc({ dataDir: service.dataDir, databaseUrl: service.databaseUrl }, rt)
        if (dncWarning) warnings.push(dncWarning)
      }
      // Stored as the service stores what it received and processed, so `ctx.data.events()` finds them too.
      const store = (row: Parameters<typeof pendingRow>[0], receivedAt: number) =>
        rt.store.db
          .insertInto('webhook_events')
          .values({ ...pendingRow(row, receivedAt), status: 'processed', processed_at: receivedAt })
          .onConflict((oc) => oc.column('event_id').doNothing())
          .execute()
      const processed: PipelineEvent[] = []
      for (const [i, given] of events.entries()) {
        if (isTestTargetEvent(given)) {
          const receivedAt = Date.parse(given.timestamp ?? '') || now
          const eventId = given.event_id ?? `${given.target}_test_${i + 1}`
          const body = given.body ?? null
          await store({ event_id: eventId, target: given.target, event_type: given.event_type, conversation_id: null, trace_id: null, agent_id: null, body: JSON.stringify(body), headers: '{}', source: 'webhook' }, receivedAt)
          processed.push({ kind: 'target', eventId, eventType: given.event_type, target: given.target, source: 'webhook', receivedAt, body })
          continue
        }
        const event = given as WebhookEvent
        const receivedAt = Date.parse(event.timestamp) || now
        const call = event.data.call
        await store({ event_id: event.event_id, target: 'formant', event_type: event.event_type, conversation_id: call.conversation_id, trace_id: call.trace_id, agent_id: call.agent_id, body: JSON.stringify(event), headers: '{}', source: 'webhook' }, receivedAt)
        await applyEventToReadModel(rt, event, 'webhook', receivedAt)
        // An opt-out in its results lists the number, as processing does before any recipe runs (src/campaigns/
        // opt-out-hook.ts) — into the test's own list: a plan called a contact who had asked not to be, which the
        // service never would.
        if (await optOutFromEvent(rt, event)) {
          warnings.push(`${event.event_id}'s results ask not to be called: ${call.to_phone} is on the test's do-not-call list, as the service lists it when it processes the event`)
        }
        processed.push({ eventId: event.event_id, eventType: event.event_type, target: 'formant', source: 'webhook', receivedAt, event })
      }
      const on = loaded.definition.on ?? []
      // One warning per type (a named target's as `<target>:<type>`), by the service's own rule of who gets what.
      const label = (e: PipelineEvent) => (e.kind === 'target' ? `${e.target}:${e.eventType}` : e.eventType)
      for (const e of new Map(processed.map((p) => [label(p), p])).values()) {
        if (subscribes(on, e)) continue
        warnings.push(`the recipe does not list ${label(e)} in \`on\` (it lists ${on.length ? on.join(', ') : 'no event types'}), so the service would not run it for these events: left out of its trigger (still stored)`)
      }
      // The recipe gets the events the service would give it, no others (given the rest too, its plan held calls the
      // service would never make). Those it does not take stay stored — a scheduled recipe's tick reads them (a report
      // tested on sample events) — and a recipe that runs on events alone, none of them its own, is not run at all.
      const delivered = processed.filter((e) => subscribes(on, e))
      if (processed.length > 0 && delivered.length === 0 && on.length > 0 && !loaded.definition.schedule) {
        return { recipe: loaded.name, status: 'not_run', error: null, result: null, now: new Date(now).toISOString(), trigger: 'event', plan: [], warnings, log: logged }
      }
      // No events of its own: a scheduled recipe runs as its tick at the frozen clock's time would (the path a recipe
      // that reads ctx.trigger takes every day), any other as a manual run.
      const trigger: RecipeTrigger<PipelineEvent> = delivered.length
        ? { type: 'event', events: delivered, event: delivered[0] }
        : loaded.definition.schedule
          ? { type: 'cron', scheduledAt: now }
          : { type: 'manual' }
      const run = await executeRun(rt, loaded.name, loaded.definition, { trigger, dryRun: true, timezone: loaded.timezone })
      // What the recipe read from the test's copies of the CSV is told with the file the author gave.
      const copies = options.csv ? [join(dataDir, 'inbox', loaded.name, basename(options.csv)), join(dataDir, 'inbox', basename(options.csv))] : []
      const error = run.error === null ? null : copies.reduce((text, copy) => text.split(copy).join(options.csv!), run.error)
      return {
        recipe: loaded.name,
        status: run.status === 'failed' ? 'failed' : 'succeeded',
        error,
        result: run.result,
        now: new Date(now).toISOString(),
        trigger: trigger.type as 'event' | 'cron' | 'manual',
        plan: run.plan,
        warnings,
        log: logged,
      }
    } finally {
      await rt.close()
      await database.close()
    }
  } finally {
    process.off('exit', removeDataDir)
    removeDataDir()
  }
}

/**
 * The recipe's first type error, as the service finds it: the same verdicts (src/recipes/type-verdicts.ts), so one the
 * service or another command already reached for this content answers at once from the installation's copy
 * (`node_modules/.cache/switchboard/`). The compiler's cost is mostly this service's own types, whatever the number of
 * recipes: so the other recipes of the folder are checked in the same pass, as the service checks its folder.
 */
async function firstTypeError(recipe: string): Promise<{ ok: true; diagnostic: RecipeDiagnostic | null } | { ok: false; error: string }> {
  const file = resolve(recipe)
  const { listRecipeFiles } = await import('./loader.ts')
  // Only files that are recipes: a folder given by path may also hold test files and other TypeScript.
  const others = listRecipeFiles(dirname(file)).map((f) => resolve(f)).filter((f) => f !== file && readFileSync(f, 'utf8').includes('defineRecipe'))
  const verdicts = createTypeVerdicts({ sharedFile: installationTypeCacheFile() })
  try {
    return { ok: true, diagnostic: (await verdicts.check([file, ...others])).get(file) ?? null }
  } catch (error) {
    // As in the service: without the compiler (a production install without TypeScript), recipes run unchecked.
    return { ok: false, error: (error as Error).message }
  } finally {
    await verdicts.close()
  }
}

