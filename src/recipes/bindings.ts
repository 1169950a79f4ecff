import { z } from 'zod'
import * as toolkit from '../campaigns/index.ts'
import { callingWindowSchema } from '../campaigns/call-input.ts'
import * as reports from '../reports/index.ts'
import type { Runtime } from '../runtime.ts'
import { checkArgument, type ArgumentSite } from '../utils/argument-error.ts'
import type { Effects } from '../effects.ts'
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
  /** Adds a number to the do-not-call list (skipped in a dry run; `added` false then). */
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
const dncOptions = z.strictObject({ file: z.union([z.string(), z.literal(false)]).optional(), defaultCountry: z.string().optional() })
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
  defaultCountry: z.string().optional(),
  timeZone: z.string().optional(),
})
const followUpsSchema = z.strictObject({
  maxAttempts: z.number().int().min(1).optional(),
  minGapMs: z.strictObject({ no_answer: z.number().optional(), busy: z.number().optional(), technical: z.number().optional() }).optional(),
  technicalFailures: z.boolean().optional(),
  window: callingWindowSchema.optional(),
  timeZone: z.string().optional(),
  horizonMs: z.number().optional(),
  maxAgeMs: z.number().optional(),
  immediateWithinMs: z.number().optional(),
  defaultCountry: z.string().optional(),
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
  defaultCountry: z.string().optional(),
  dnc: dncOptions.optional(),
  normalizer: z.custom<toolkit.PhoneNormalizer>((v) => typeof v === 'function').optional(),
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
const reportSchema = z.strictObject({
  date: z.string().regex(/^\d{4}-\d{2}-\d{2}$/, { error: 'must be a day, YYYY-MM-DD' }).optional(),
  timezone: z.string().optional(),
  to: z.union([z.string(), z.array(z.string())]).optional(),
})

export function createBindings(rt: Runtime, effects: Effects, recipe: string, timeZone?: string): Bindings {
  // The pipeline's own opt-out hook stays out of reach; the bound members below replace their raw forms.
  const { optOutFromEvent: _pipelineHook, ...pure } = toolkit
  const campaigns: RecipeCampaigns = {
    ...pure,
    launchBatch: (input) =>
      toolkit.launchBatch(rt, { timeZone, ...checkArgument(launchBatchSchema, input, site('ctx.campaigns.launchBatch', 'input', '{ agentId: number, name: string, rows: [{ customer_phone, … }], rejects?, columns?, campaign?, window?, closingMarginMinutes?, defaultCountry?, timeZone? }')) }, effects),
    scheduleCall: (call, options = {}) => toolkit.scheduleCall(rt, call, effects, { recipe, timeZone, ...options }),
    scheduleCalls: (calls, options = {}) =>
      toolkit.scheduleCalls(rt, checkArgument(z.array(z.unknown(), { error: 'must be an array of calls' }), calls, site('ctx.campaigns.scheduleCalls', 'calls', 'an array of calls ({ agentId, phone, … } or follow-up plans)')) as Array<toolkit.NewCall | toolkit.CallPlan>, effects, { recipe, timeZone, ...options }),
    runFollowUps: (options = {}) => {
      const checked = checkArgument(followUpsSchema, options, site('ctx.campaigns.runFollowUps', 'options', '{ maxAttempts?, minGapMs?, window?, timeZone?, agentId?, conversationIds?, … }'))
      return toolkit.runFollowUps(rt, { recipe, timeZone, ...checked }, effects)
    },
    prepareBatch: (source, options = {}) => {
      if (typeof source !== 'string' && (typeof source !== 'object' || source === null)) {
        checkArgument(z.string(), source, site('ctx.campaigns.prepareBatch', 'source', 'a CSV file path, or a stream of CSV text'))
      }
      return toolkit.prepareBatch(rt, source, checkArgument(prepareSchema, options, site('ctx.campaigns.prepareBatch', 'options', '{ phoneAliases?, delimiter?, name?, defaultCountry?, dnc? }')))
    },
    loadDncList: (options) => toolkit.loadDncList(rt, options),
    isBlocked: (phone, options) => toolkit.isBlocked(rt, checkArgument(phoneArg, phone, site('ctx.campaigns.isBlocked', 'phone', 'a phone number (string)')), options),
    async addToDnc(phone, details) {
      checkArgument(phoneArg, phone, site('ctx.campaigns.addToDnc', 'phone', 'a phone number (string)'))
      if (effects.dryRun) {
        const n = toolkit.normalizePhone(phone, { defaultCountry: rt.config.defaultCountry })
        return { added: false, phone: n.ok ? n.e164 : phone }
      }
      return toolkit.addToDnc(rt, phone, details)
    },
    async removeFromDnc(phone) {
      checkArgument(phoneArg, phone, site('ctx.campaigns.removeFromDnc', 'phone', 'a phone number (string)'))
      return effects.dryRun ? false : toolkit.removeFromDnc(rt, phone)
    },
    loadFollowUpInputs: (options) => toolkit.loadFollowUpInputs(rt, options),
    defaultDncFile: () => toolkit.defaultDncFile(rt),
  }
  return {
    campaigns,
    reports: {
      sendDailyReport: (options = {}) =>
        reports.sendDailyReport(rt, checkArgument(reportSchema, options, site('ctx.reports.sendDailyReport', 'options', '{ date?: "YYYY-MM-DD", timezone?, to? }')), effects),
      findReportMail: (options) =>
        reports.findReportMail(rt, checkArgument(reportSchema.required({ date: true }), options, site('ctx.reports.findReportMail', 'options', '{ date: "YYYY-MM-DD", timezone?, to? }'))),
      buildDailyReport: (options) =>
        reports.buildDailyReport(rt, checkArgument(reportSchema.omit({ to: true }).required({ date: true }), options, site('ctx.reports.buildDailyReport', 'options', '{ date: "YYYY-MM-DD", timezone? }'))),
      renderDailyReport: reports.renderDailyReport,
      dayRange: reports.dayRange,
      yesterday: reports.yesterday,
    },
    mail: {
      send: (message) =>
        reports.sendMail(rt, checkArgument(mailSchema, message, site('ctx.mail.send', 'message', '{ to: string | string[], subject: string, text: string, html?, attachments? }')), effects),
    },
    destinations: recipeDestinations(rt, effects, recipe),
  }
}
