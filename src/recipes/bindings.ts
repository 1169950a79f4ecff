import * as toolkit from '../campaigns/index.ts'
import * as reports from '../reports/index.ts'
import type { Runtime } from '../runtime.ts'
import type { Effects } from '../utils/effects.ts'

type Toolkit = typeof toolkit
type Drop<F> = F extends (rt: Runtime, ...rest: infer A) => infer R ? (...args: A) => R : never

/**
 * `ctx.campaigns`: the whole toolkit, with the functions that need the service bound to it and to the
 * run — launches, calls and follow-ups go through the run's plan (a dry run only plans), calls are
 * recorded with the recipe's name, and do-not-call writes are skipped in a dry run.
 */
export type RecipeCampaigns = Omit<
  Toolkit,
  'launchBatch' | 'scheduleCall' | 'runFollowUps' | 'prepareBatch' | 'loadDncList' | 'isBlocked' | 'addToDnc' | 'removeFromDnc' | 'loadFollowUpInputs' | 'defaultDncFile'
> & {
  launchBatch(input: toolkit.LaunchBatchInput): Promise<toolkit.LaunchBatchResult>
  scheduleCall(plan: toolkit.CallPlan, options?: toolkit.ScheduleCallOptions): Promise<toolkit.ScheduleCallOutcome>
  runFollowUps(options?: toolkit.RunFollowUpsOptions): Promise<toolkit.RunFollowUpsResult>
  prepareBatch: Drop<Toolkit['prepareBatch']>
  loadDncList: Drop<Toolkit['loadDncList']>
  isBlocked: Drop<Toolkit['isBlocked']>
  addToDnc: Drop<Toolkit['addToDnc']>
  removeFromDnc: Drop<Toolkit['removeFromDnc']>
  loadFollowUpInputs: Drop<Toolkit['loadFollowUpInputs']>
  defaultDncFile(): string
}

/** `ctx.reports`: the daily report, bound to the service and the run (a dry run plans the mail). */
export interface RecipeReports {
  sendDailyReport(options?: reports.SendReportOptions): Promise<reports.SendReportResult>
  buildDailyReport(options: reports.BuildReportOptions): Promise<reports.DailyReport>
  renderDailyReport: typeof reports.renderDailyReport
  dayRange: typeof reports.dayRange
  yesterday: typeof reports.yesterday
}

/** `ctx.mail`: one message over SMTP_URL (or into DATA_DIR/outbox); planned only in a dry run. */
export interface RecipeMail {
  send(message: reports.MailMessage): Promise<reports.MailResult>
}

export interface Bindings {
  campaigns: RecipeCampaigns
  reports: RecipeReports
  mail: RecipeMail
}

export function createBindings(rt: Runtime, effects: Effects, recipe: string): Bindings {
  const campaigns: RecipeCampaigns = {
    ...toolkit,
    launchBatch: (input) => toolkit.launchBatch(rt, input, effects),
    scheduleCall: (plan, options = {}) => toolkit.scheduleCall(rt, plan, effects, { recipe, ...options }),
    runFollowUps: (options = {}) => toolkit.runFollowUps(rt, { recipe, ...options }, effects),
    prepareBatch: (source, options) => toolkit.prepareBatch(rt, source, options),
    loadDncList: (options) => toolkit.loadDncList(rt, options),
    isBlocked: (phone, options) => toolkit.isBlocked(rt, phone, options),
    async addToDnc(phone, details) {
      if (effects.dryRun) {
        const n = toolkit.normalizePhone(phone, { defaultCountry: rt.config.defaultCountry })
        return { added: false, phone: n.ok ? n.e164 : phone }
      }
      return toolkit.addToDnc(rt, phone, details)
    },
    async removeFromDnc(phone) {
      return effects.dryRun ? false : toolkit.removeFromDnc(rt, phone)
    },
    loadFollowUpInputs: (options) => toolkit.loadFollowUpInputs(rt, options),
    defaultDncFile: () => toolkit.defaultDncFile(rt),
  }
  return {
    campaigns,
    reports: {
      sendDailyReport: (options = {}) => reports.sendDailyReport(rt, options, effects),
      buildDailyReport: (options) => reports.buildDailyReport(rt, options),
      renderDailyReport: reports.renderDailyReport,
      dayRange: reports.dayRange,
      yesterday: reports.yesterday,
    },
    mail: { send: (message) => reports.sendMail(rt, message, effects) },
  }
}
