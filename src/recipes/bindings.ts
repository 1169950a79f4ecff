import { stat } from 'node:fs/promises'
import { isSupportedCountry } from 'libphonenumber-js/max'
import { z } from 'zod'
import * as toolkit from '../campaigns/index.ts'
import { callingWindowSchema } from '../campaigns/call-input.ts'
import { addToDncFor, removeFromDncFor } from '../campaigns/dnc-effects.ts'
import { dncOverlayOf } from '../campaigns/dry-run-dnc.ts'
import * as reports from '../reports/index.ts'
import { assertTimeZone } from '../reports/day-range.ts'
import type { Runtime } from '../runtime.ts'
import { ArgumentError, checkArgument, type ArgumentSite } from '../utils/argument-error.ts'
import type { Effects } from '../effects.ts'
import { MAX_DATE_MS } from '../utils/time-range.ts'
import { recipeDestinations, type RecipeDestinations } from '../destinations/publish.ts'

type Toolkit = typeof toolkit
type Drop<F> = F extends (rt: Runtime, ...rest: infer A) => infer R ? (...args: A) => R : never

/** Toolkit members that need the service: bound below, so a recipe never passes the runtime itself. */
type Bound =
  | 'launchBatch' | 'scheduleCall' | 'scheduleCalls' | 'runFollowUps' | 'prepareBatch' | 'loadDncList' | 'isBlocked' | 'addToDnc'
  | 'removeFromDnc' | 'loadFollowUpInputs' | 'defaultDncFile'
  // The webhook pipeline's own hook (it takes the runtime); a recipe records opt-outs with addToDnc.
  | 'optOutFromEvent'

/**
 * `ctx.campaigns`: the campaign toolkit. The pure helpers (phones, CSV, dedupe, calling windows, retry
 * context, follow-up planning) are exported as they are; the members below are bound to the service and
 * to the run — launches, calls and follow-ups go through the run's plan (a dry run only plans), calls are
 * recorded with the recipe's name, and do-not-call writes are skipped in a dry run.
 */
export interface RecipeCampaigns extends Omit<Toolkit, Bound> {
  /**
   * Places or schedules one call under the campaign rules: the number becomes E.164 (or the outcome is
   * `rejected` with the reason), the do-not-call list is checked (`blocked`), and the time moves into the
   * recipient's calling window. A dry run records it in the plan (`planned`). `call` is the short form
   * `{ agentId, phone, parameters?, scheduledFor?, campaign?, idempotencyKey?, retryContext?, conversationId? }`
   * or a follow-up plan `{ request, … }`.
   */
  scheduleCall(call: toolkit.NewCall | toolkit.CallPlan, options?: toolkit.ScheduleCallOptions): Promise<toolkit.ScheduleCallOutcome>
  /**
   * `scheduleCall` for many calls at once, with the same rules and outcomes (in the order given): the
   * do-not-call list is read once and the calls are queued a hundred per commit, so a recipe planning
   * thousands of calls does not pay a transaction per call.
   */
  scheduleCalls(calls: Array<toolkit.NewCall | toolkit.CallPlan>, options?: toolkit.ScheduleCallOptions): Promise<toolkit.ScheduleCallOutcome[]>
  /**
   * Uploads one batch (POST /v1/batch-call) after normalizing, deduping and DNC-checking its rows again;
   * rows that fail become rejects. The provider calls a batch at once, so rows whose recipient's calling
   * window is closed now are held back and returned in `deferred` (with when it opens) for a later run.
   * A dry run records the batch (rows and rejects) in the plan.
   */
  launchBatch(input: toolkit.LaunchBatchInput): Promise<toolkit.LaunchBatchResult>
  /**
   * Plans and schedules follow-ups for unanswered and busy calls from the read model and the calls ledger
   * (attempt cap, gaps, calling window, retry_context, deterministic keys), and records opt-outs.
   */
  runFollowUps(options?: toolkit.RunFollowUpsOptions): Promise<toolkit.RunFollowUpsResult>
  /**
   * Reads a contacts CSV (a file path, or a stream of CSV text) into a clean batch: E.164, deduped, do-not-call numbers
   * removed; every other row becomes a reject with its row number and reason.
   */
  prepareBatch(source: toolkit.ContactsSource, options?: Omit<toolkit.PrepareOptions, 'dnc'> & { dnc?: toolkit.DncOptions }): Promise<toolkit.PreparedBatch>
  /** The do-not-call list (table + file) as a snapshot for checking many numbers. */
  loadDncList: Drop<Toolkit['loadDncList']>
  /** Whether one number (any form) is on the do-not-call list. */
  isBlocked(phone: string, options?: toolkit.DncOptions): Promise<boolean>
  /**
   * Adds a number to the do-not-call list. A dry run writes nothing, but refuses what the real run refuses, answers
   * `added` as it would, and its `isBlocked` and `loadDncList` count the number for the rest of the run.
   */
  addToDnc(phone: string, details?: { reason?: string | null; source?: string | null }): Promise<{ added: boolean; phone: string }>
  /** Removes a number from the do-not-call table (skipped in a dry run). Returns whether it was listed. */
  removeFromDnc(phone: string): Promise<boolean>
  /** The follow-up planner's inputs from the database (for recipes that plan with `planFollowUps` themselves). */
  loadFollowUpInputs: Drop<Toolkit['loadFollowUpInputs']>
  /** The do-not-call file's default path, `$DATA_DIR/dnc.csv`. */
  defaultDncFile(): string
}

/** `ctx.reports`: the daily report, bound to the service and the run (a dry run plans the mail). */
export interface RecipeReports {
  /** Builds and mails one day's report (default: yesterday in RECIPES_TIMEZONE, to REPORT_TO). */
  sendDailyReport(options?: reports.SendReportOptions): Promise<reports.SendReportResult>
  /**
   * One day's report as already handed to the relay or the outbox (queued, sent or written) for every recipient of
   * `to` (defaults: RECIPES_TIMEZONE, REPORT_TO), or undefined: lets a catch-up skip a day that a run cut short had
   * mailed before it recorded so.
   */
  findReportMail(options: { date: string; timezone?: string; to?: string | string[] }): Promise<reports.MailLogEntry | undefined>
  /** The figures of one day, without mailing them. */
  buildDailyReport(options: reports.BuildReportOptions): Promise<reports.DailyReport>
  /** Renders a built report as `{ subject, html, text, csv }`. */
  renderDailyReport: typeof reports.renderDailyReport
  /** The [start, end) instants of a calendar day in a time zone. */
  dayRange: typeof reports.dayRange
  /** Yesterday's date (YYYY-MM-DD) in a time zone, seen from an instant. */
  yesterday: typeof reports.yesterday
}

/** `ctx.mail`: one message over SMTP_URL (or into DATA_DIR/outbox); planned only in a dry run. */
export interface RecipeMail {
  /** Sends one message (retried on temporary failures); a dry run records it in the plan instead. */
  send(message: reports.MailMessage): Promise<reports.MailResult>
}

export interface Bindings {
  campaigns: RecipeCampaigns
  reports: RecipeReports
  mail: RecipeMail
  destinations: RecipeDestinations
}

const site = (fn: string, arg: string, expected: string): ArgumentSite => ({ fn, arg, expected })
const phoneArg = z.string({ error: 'must be a phone number as a string, e.g. "+919876543210"' })
/** A country as libphonenumber knows it: `'India'` passed, and the number was "without a country code" downstream. */
// In any case, as DEFAULT_COUNTRY is read (src/config/schema.ts): `'us'` is US.
const timeZone = z.string({ error: 'must be an IANA time zone name (a string)' }).refine(toolkit.isValidTimeZone, { error: 'must be an IANA time zone such as "Asia/Kolkata"' })
const countryCode = z.string().transform((c) => c.toUpperCase()).refine((c) => isSupportedCountry(c), { error: 'must be a country code libphonenumber knows (ISO 3166, e.g. "IN", "US", "GB")' })
const dncOptions = z.strictObject({ file: z.union([z.string(), z.literal(false)]).optional(), defaultCountry: countryCode.optional() })
const scheduleOptionsSchema = z.strictObject({
  recipe: z.string().nullable().optional(),
  apiKey: z.string().optional(),
  dnc: dncOptions.optional(),
  timeZone: timeZone.optional(),
  defaultCountry: countryCode.optional(),
})
const SCHEDULE_OPTIONS = '{ defaultCountry?, timeZone?, dnc?: { file?, defaultCountry? }, apiKey?, recipe? }'
// Checked without being copied: z.record() builds a new object and skips a `__proto__` key, so a CSV column of that
// name reached the provider's batch with every cell empty.
const batchRow = z.custom<Record<string, string>>(
  (row) => typeof row === 'object' && row !== null && !Array.isArray(row) && Object.values(row).every((cell) => typeof cell === 'string'),
  { error: 'must be an object of column → cell, every cell a string (batch cells must be strings)' },
)
const rejectSchema = z.object({ row: z.number().int(), raw: z.string(), reason: z.string() })

const launchBatchSchema = z.strictObject({
  agentId: z.number({ error: 'must be the agent id (a whole number, e.g. 101)' }).int(),
  name: z.string().min(1, { error: 'must name the batch' }),
  rows: z.array(batchRow),
  rejects: z.array(rejectSchema).optional(),
  columns: z.array(z.string()).optional(),
  dnc: dncOptions.optional(),
  campaign: z.union([z.string().min(1, { error: 'must name the campaign (or be false for none)' }), z.literal(false)]).optional(),
  window: z.union([callingWindowSchema, z.literal(false)]).optional(),
  closingMarginMinutes: z.number({ error: 'must be a number of minutes (0 for none)' }).min(0, { error: 'must be 0 or more minutes' }).optional(),
  defaultCountry: countryCode.optional(),
  timeZone: timeZone.optional(),
})
const followUpsSchema = z.strictObject({
  maxAttempts: z.number().int().min(1).optional(),
  minGapMs: z.strictObject({ no_answer: z.number().min(0).optional(), busy: z.number().min(0).optional(), technical: z.number().min(0).optional() }).optional(),
  technicalFailures: z.boolean().optional(),
  window: callingWindowSchema.optional(),
  timeZone: timeZone.optional(),
  horizonMs: z.number().optional(),
  maxAgeMs: z.number().optional(),
  immediateWithinMs: z.number().optional(),
  defaultCountry: countryCode.optional(),
  agentId: z.number().int().optional(),
  retryContext: z.looseObject({}).optional(),
  conversationIds: z.array(z.string()).optional(),
  agentIds: z.array(z.number().int()).optional(),
  campaigns: z.array(z.string()).optional(),
  recipe: z.string().nullable().optional(),
  historyMs: z.number().optional(),
  dnc: dncOptions.optional(),
  apiKey: z.string().optional(),
})
const prepareSchema = z.strictObject({
  phoneAliases: z.array(z.string()).optional(),
  delimiter: z.string().optional(),
  name: z.string().optional(),
  defaultCountry: countryCode.optional(),
  dnc: dncOptions.optional(),
  normalizer: z.custom<toolkit.PhoneNormalizer>((v) => typeof v === 'function').optional(),
  exclude: z.custom<(e164: string) => string | undefined>((v) => typeof v === 'function', { error: 'must be a function (number → reason, or undefined to keep it)' }).optional(),
})
const mailSchema = z.strictObject({
  to: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)], { error: 'must be an address or a list of addresses' }),
  subject: z.string(),
  text: z.string({ error: 'must be the plain-text body' }),
  html: z.string().optional(),
  attachments: z
    .array(z.strictObject({ filename: z.string(), content: z.union([z.string(), z.instanceof(Buffer)]), contentType: z.string().optional() }))
    .optional(),
})
const dncDetails = z.strictObject({ reason: z.string().nullable().optional(), source: z.string().nullable().optional() })
const reportSchema = z.strictObject({
  date: z.string().regex(/^\d{4}-\d{2}-\d{2}$/, { error: 'must be a day, YYYY-MM-DD' }).optional(),
  timezone: z.string().optional(),
  to: z.union([z.string(), z.array(z.string())]).optional(),
})

/**
 * The toolkit's pure helpers as a recipe gets them: the same functions, with their arguments checked first. Unchecked,
 * a wrong argument failed deep inside ("text.replace is not a function", "Invalid time value", "Invalid time zone
 * specified: Mars/Base") without naming the function or the argument. The toolkit's own callers (planning 100,000
 * follow-ups) call the unchecked functions and pay nothing for it.
 */

const instant = z
  .number({ error: 'must be an instant: epoch milliseconds (a number, e.g. ctx.now.getTime())' })
  .finite({ error: 'must be an instant: a finite number of epoch milliseconds' })
  .min(-MAX_DATE_MS, { error: 'must be within Date\'s range (±8.64e15)' })
  .max(MAX_DATE_MS, { error: 'must be within Date\'s range (±8.64e15)' })
/** A report's zone: refused as `report send --timezone` refuses it (EST too: Intl reads it as UTC−5 all year). */
const reportZone = z.string({ error: 'must be an IANA time zone name (a string)' }).superRefine((zone, ctx) => {
  try {
    assertTimeZone(zone)
  } catch (error) {
    ctx.addIssue({ code: 'custom', message: (error as Error).message })
  }
})
const day = z.string({ error: 'must be a day, YYYY-MM-DD' }).regex(/^\d{4}-\d{2}-\d{2}$/, { error: 'must be a day, YYYY-MM-DD' })
const calendarDate = z
  .strictObject({
    year: z.number().int().min(1).max(9999),
    month: z.number().int().min(1, { error: 'must be a month, 1 to 12' }).max(12, { error: 'must be a month, 1 to 12' }),
    day: z.number().int().min(1, { error: 'must be a day of the month, from 1' }).max(31, { error: 'must be a day of the month, up to 31' }),
  })
  // Date.UTC rolls 30 February over into March: a day the month does not have is refused instead.
  .refine((d) => d.day <= new Date(Date.UTC(d.year, d.month, 0)).getUTCDate(), { error: 'must be a day the month has', path: ['day'] })
const minutesOfDay = z.number({ error: 'must be minutes since midnight (a number, 0 to 1440)' }).int({ error: 'must be a whole number of minutes' }).min(0, { error: 'must be 0 to 1440 (minutes since midnight)' }).max(24 * 60, { error: 'must be 0 to 1440 (minutes since midnight)' })
const text = z.string({ error: 'must be a string' })
const strings = z.array(z.string(), { error: 'must be an array of strings' })
const keyPart = z.union([z.string().min(1, { error: 'is empty (a missing value: every call would get the same key)' }), z.number().finite()], {
  error: (issue) => (issue.input === undefined ? 'is undefined (a missing value: every call would get the same key)' : 'must be a non-empty string or a finite number'),
})
const keyParts = z.array(keyPart).min(1, { error: 'no parts given: the key would be the same for every call' })
const iterable = z.custom<Iterable<unknown>>((v) => typeof v === 'object' && v !== null && Symbol.iterator in v, { error: 'must be an array (or another iterable)' })
const fn = z.custom<(...args: never[]) => unknown>((v) => typeof v === 'function', { error: 'must be a function' })
const FOLLOW_UP_INPUT = '{ conversations, calls, dnc, now, options? } (conversations and calls from ctx.campaigns.loadFollowUpInputs)'
const followUpInputShape = z.looseObject({
  conversations: iterable,
  calls: iterable,
  dnc: z.custom<{ has(e164: string): boolean }>((v) => typeof v === 'object' && v !== null && typeof (v as { has?: unknown }).has === 'function', { error: 'must be a do-not-call list ({ has(e164) }, e.g. await ctx.campaigns.loadDncList())' }),
  now: instant,
})
const section = z.looseObject({})
const report = z.looseObject({
  date: day, timezone: z.string(), startMs: z.number(), endMs: z.number(), generatedAt: z.number(), totals: section, agents: z.array(section),
  campaigns: z.array(section), followUps: section, batches: section, webhooks: section, trend: z.array(section), change: section, conversations: z.array(section),
})
const followUpInputsOptions = z.strictObject({ since: instant, conversationIds: z.array(z.string()).optional() })

const c = (name: string) => `ctx.campaigns.${name}`
const r = (name: string) => `ctx.reports.${name}`

/** `ctx.campaigns`' pure helpers, checked. */
export function checkedCampaignHelpers() {
  return {
    // A part that is missing (a CSV column named otherwise: `row.phone` undefined) joined as '' and gave every contact
    // the same key — all but the first refused as duplicates, without a word.
    deterministicKey: ((...parts) =>
      toolkit.deterministicKey(
        ...checkArgument(keyParts, parts, { fn: c('deterministicKey'), arg: 'parts', expected: 'one or more parts, each a non-empty string or a finite number, e.g. (campaign, row.phone, attempt)' }),
      )) satisfies typeof toolkit.deterministicKey,
    normalizePhone: ((phone, options) =>
      toolkit.normalizePhone(checkArgument(text, phone, { fn: c('normalizePhone'), arg: 'phone', expected: 'a phone number as a string, e.g. "98765 43210"' }), options)) satisfies typeof toolkit.normalizePhone,
    headerKey: ((header) => toolkit.headerKey(checkArgument(text, header, { fn: c('headerKey'), arg: 'header', expected: 'a column header (a string)' }))) satisfies typeof toolkit.headerKey,
    findPhoneColumn: ((headers, extraAliases) =>
      toolkit.findPhoneColumn(
        checkArgument(strings, headers, { fn: c('findPhoneColumn'), arg: 'headers', expected: 'the header row as an array of strings, e.g. ["Name", "Mobile No"]' }),
        extraAliases === undefined ? undefined : checkArgument(strings, extraAliases, { fn: c('findPhoneColumn'), arg: 'extraAliases', expected: 'more phone column names (an array of strings)' }),
      )) satisfies typeof toolkit.findPhoneColumn,
    dedupeBy: (<T>(items: Iterable<T>, key: (item: T) => string) => {
      checkArgument(iterable, items, { fn: c('dedupeBy'), arg: 'items', expected: 'an array of items' })
      checkArgument(fn, key, { fn: c('dedupeBy'), arg: 'key', expected: 'a function from an item to its key, e.g. (row) => row.phone' })
      return toolkit.dedupeBy(items, key)
    }) satisfies typeof toolkit.dedupeBy,
    planFollowUps: ((input) => {
      checkArgument(followUpInputShape, input, { fn: c('planFollowUps'), arg: 'input', expected: FOLLOW_UP_INPUT })
      return toolkit.planFollowUps(input)
    }) satisfies typeof toolkit.planFollowUps,
    localTime: ((at, zone) =>
      toolkit.localTime(
        checkArgument(instant, at, { fn: c('localTime'), arg: 'at', expected: 'epoch milliseconds' }),
        checkArgument(timeZone, zone, { fn: c('localTime'), arg: 'timeZone', expected: 'an IANA time zone, e.g. "Asia/Kolkata"' }),
      )) satisfies typeof toolkit.localTime,
    zonedTimeToEpoch: ((date, minutes, zone, notBefore) =>
      toolkit.zonedTimeToEpoch(
        checkArgument(calendarDate, date, { fn: c('zonedTimeToEpoch'), arg: 'date', expected: '{ year, month: 1–12, day: 1–31 } (a day the month has)' }),
        checkArgument(minutesOfDay, minutes, { fn: c('zonedTimeToEpoch'), arg: 'minutes', expected: 'minutes since local midnight, 0–1440 (10:00 is 600)' }),
        checkArgument(timeZone, zone, { fn: c('zonedTimeToEpoch'), arg: 'timeZone', expected: 'an IANA time zone, e.g. "Asia/Kolkata"' }),
        notBefore === undefined ? undefined : checkArgument(instant, notBefore, { fn: c('zonedTimeToEpoch'), arg: 'notBefore', expected: 'epoch milliseconds' }),
      )) satisfies typeof toolkit.zonedTimeToEpoch,
    nextCallingTime: ((at, zone, window) =>
      toolkit.nextCallingTime(
        checkArgument(instant, at, { fn: c('nextCallingTime'), arg: 'at', expected: 'epoch milliseconds (a number, e.g. Date.parse(text))' }),
        checkArgument(timeZone, zone, { fn: c('nextCallingTime'), arg: 'timeZone', expected: 'an IANA time zone, e.g. "Asia/Kolkata"' }),
        window === undefined ? undefined : checkArgument(callingWindowSchema, window, { fn: c('nextCallingTime'), arg: 'window', expected: '{ start: "09:00", end: "21:00" }' }),
      )) satisfies typeof toolkit.nextCallingTime,
    isWithinWindow: ((at, zone, window) =>
      toolkit.isWithinWindow(
        checkArgument(instant, at, { fn: c('isWithinWindow'), arg: 'at', expected: 'epoch milliseconds' }),
        checkArgument(timeZone, zone, { fn: c('isWithinWindow'), arg: 'timeZone', expected: 'an IANA time zone, e.g. "Asia/Kolkata"' }),
        window === undefined ? undefined : checkArgument(callingWindowSchema, window, { fn: c('isWithinWindow'), arg: 'window', expected: '{ start: "09:00", end: "21:00" }' }),
      )) satisfies typeof toolkit.isWithinWindow,
  }
}

/** `ctx.campaigns.loadFollowUpInputs(options)`'s options, checked (`since: 'yesterday'` read nothing at all). */
export function checkFollowUpInputsOptions(options: unknown): { since: number; conversationIds?: string[] } {
  return checkArgument(followUpInputsOptions, options, { fn: c('loadFollowUpInputs'), arg: 'options', expected: '{ since: epoch milliseconds, conversationIds?: string[] }' })
}

/** A path to a folder is not a CSV: said so, rather than as the file system's EISDIR. */
export async function checkContactsPath(source: unknown): Promise<void> {
  if (typeof source !== 'string') return
  const found = await stat(source).catch(() => undefined)
  if (found?.isDirectory()) {
    throw new ArgumentError(`${c('prepareBatch')}(source): source: is a folder, not a file — expected a CSV file path (a folder's files: readdir it and pass each .csv), got ${JSON.stringify(source)}`)
  }
}

/** `ctx.reports`' pure helpers, checked. */
export function checkedReportHelpers() {
  return {
    yesterday: ((nowMs, zone) =>
      reports.yesterday(
        checkArgument(instant, nowMs, { fn: r('yesterday'), arg: 'nowMs', expected: 'epoch milliseconds, e.g. ctx.now.getTime()' }),
        checkArgument(reportZone, zone, { fn: r('yesterday'), arg: 'timezone', expected: 'an IANA time zone, e.g. ctx.timezone' }),
      )) satisfies typeof reports.yesterday,
    dayRange: ((date, zone) =>
      reports.dayRange(
        checkArgument(day, date, { fn: r('dayRange'), arg: 'date', expected: 'a day, YYYY-MM-DD' }),
        checkArgument(reportZone, zone, { fn: r('dayRange'), arg: 'timezone', expected: 'an IANA time zone, e.g. ctx.timezone' }),
      )) satisfies typeof reports.dayRange,
    renderDailyReport: ((built) => {
      checkArgument(report, built, { fn: r('renderDailyReport'), arg: 'report', expected: 'a report from await ctx.reports.buildDailyReport({ date })' })
      return reports.renderDailyReport(built)
    }) satisfies typeof reports.renderDailyReport,
  }
}

export function createBindings(rt: Runtime, effects: Effects, recipe: string, timeZone?: string): Bindings {
  // The pipeline's own opt-out hook stays out of reach; the bound members below replace their raw forms.
  const { optOutFromEvent: _pipelineHook, ...pure } = toolkit
  const campaigns: RecipeCampaigns = {
    ...pure,
    ...checkedCampaignHelpers(),
    // As runFollowUps plans: numbers in their national form read by DEFAULT_COUNTRY, and the recipe's time zone where the
    // number's country has several. The planner's own defaults (IN, UTC) planned (415) 555-0123 as an Indian number.
    planFollowUps: (input) => {
      checkArgument(followUpInputShape, input, { fn: 'ctx.campaigns.planFollowUps', arg: 'input', expected: FOLLOW_UP_INPUT })
      return toolkit.planFollowUps({ ...input, options: { defaultCountry: rt.config.defaultCountry, timeZone: timeZone ?? rt.config.recipes.timezone, ...input.options } })
    },
    launchBatch: (input) =>
      toolkit.launchBatch(rt, { timeZone, ...checkArgument(launchBatchSchema, input, site('ctx.campaigns.launchBatch', 'input', '{ agentId: number, name: string, rows: [{ customer_phone, … }], rejects?, columns?, campaign?, window?, closingMarginMinutes?, defaultCountry?, timeZone? }')) }, effects),
    // The options are checked as every other argument: `{ defaultcountry: 'US' }` was ignored, and the number read as Indian.
    scheduleCall: (call, options = {}) =>
      toolkit.scheduleCall(rt, call, effects, { recipe, timeZone, ...checkArgument(scheduleOptionsSchema, options, site('ctx.campaigns.scheduleCall', 'options', SCHEDULE_OPTIONS)) }),
    scheduleCalls: (calls, options = {}) => {
      const checked = checkArgument(scheduleOptionsSchema, options, site('ctx.campaigns.scheduleCalls', 'options', SCHEDULE_OPTIONS))
      return toolkit.scheduleCalls(rt, checkArgument(z.array(z.unknown(), { error: 'must be an array of calls' }), calls, site('ctx.campaigns.scheduleCalls', 'calls', 'an array of calls ({ agentId, phone, … } or follow-up plans)')) as Array<toolkit.NewCall | toolkit.CallPlan>, effects, { recipe, timeZone, ...checked })
    },
    runFollowUps: (options = {}) => {
      const checked = checkArgument(followUpsSchema, options, site('ctx.campaigns.runFollowUps', 'options', '{ maxAttempts?, minGapMs?, window?, timeZone?, agentId?, conversationIds?, … }'))
      return toolkit.runFollowUps(rt, { recipe, timeZone, ...checked }, effects)
    },
    prepareBatch: async (source, options = {}) => {
      if (typeof source !== 'string' && (typeof source !== 'object' || source === null)) {
        checkArgument(z.string(), source, site('ctx.campaigns.prepareBatch', 'source', 'a CSV file path, or a stream of CSV text'))
      }
      const checked = checkArgument(prepareSchema, options, site('ctx.campaigns.prepareBatch', 'options', '{ phoneAliases?, delimiter?, name?, defaultCountry?, dnc?, exclude? }'))
      await checkContactsPath(source)
      return toolkit.prepareBatch(rt, source, checked, dncOverlayOf(effects))
    },
    // A dry run's own addToDnc / removeFromDnc count for the rest of the run (src/campaigns/dry-run-dnc.ts).
    loadDncList: (options) => toolkit.loadDncList(rt, options, dncOverlayOf(effects)),
    async isBlocked(phone, options) {
      checkArgument(phoneArg, phone, site('ctx.campaigns.isBlocked', 'phone', 'a phone number (string)'))
      return toolkit.isBlocked(rt, phone, options, dncOverlayOf(effects))
    },
    async addToDnc(phone, details) {
      checkArgument(phoneArg, phone, site('ctx.campaigns.addToDnc', 'phone', 'a phone number (string)'))
      const checked = checkArgument(dncDetails.optional(), details, site('ctx.campaigns.addToDnc', 'details', '{ reason?: string, source?: string }'))
      return addToDncFor(rt, effects, phone, checked)
    },
    async removeFromDnc(phone) {
      checkArgument(phoneArg, phone, site('ctx.campaigns.removeFromDnc', 'phone', 'a phone number (string)'))
      return removeFromDncFor(rt, effects, phone)
    },
    loadFollowUpInputs: (options) => toolkit.loadFollowUpInputs(rt, checkFollowUpInputsOptions(options)),
    defaultDncFile: () => toolkit.defaultDncFile(rt),
  }
  return {
    campaigns,
    reports: {
      sendDailyReport: (options = {}) => {
        const checked = checkArgument(reportSchema, options, site('ctx.reports.sendDailyReport', 'options', '{ date?: "YYYY-MM-DD", timezone?, to? }'))
        // Refused in a dry run too, as the real run refuses it — and with what a recipe can do about it.
        const to = checked.to ?? rt.config.mail.reportTo
        if (typeof to === 'string' ? to.trim() === '' : to.length === 0) {
          throw new ArgumentError('ctx.reports.sendDailyReport(options): no recipient for the daily report: set REPORT_TO or pass { to } to ctx.reports.sendDailyReport')
        }
        return reports.sendDailyReport(rt, checked, effects)
      },
      findReportMail: (options) =>
        reports.findReportMail(rt, checkArgument(reportSchema.required({ date: true }), options, site('ctx.reports.findReportMail', 'options', '{ date: "YYYY-MM-DD", timezone?, to? }'))),
      buildDailyReport: (options) =>
        reports.buildDailyReport(rt, checkArgument(reportSchema.omit({ to: true }).required({ date: true }), options, site('ctx.reports.buildDailyReport', 'options', '{ date: "YYYY-MM-DD", timezone? }'))),
      ...checkedReportHelpers(),
    },
    mail: {
      send: (message) =>
        reports.sendMail(rt, checkArgument(mailSchema, message, site('ctx.mail.send', 'message', '{ to: string | string[], subject: string, text: string, html?, attachments? }')), effects),
    },
    destinations: recipeDestinations(rt, effects, recipe),
  }
}
