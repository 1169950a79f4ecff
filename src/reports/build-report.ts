import type { Runtime } from '../runtime.ts'
import { loadBatchSection, type BatchSection } from './batch-metrics.ts'
import { assertTimeZone, dayRange, parseDate } from './day-range.ts'
import { loadDayRows, type ReportRow } from './day-rows.ts'
import type { Figures } from './figures.ts'
import { foldDay } from './fold-day.ts'
import { loadFollowUps, type FollowUps } from './follow-ups.ts'
import type { AgentFigures } from './per-agent.ts'
import type { CampaignFigures } from './per-campaign.ts'
import { buildTrend, type DayChange, type TrendDay } from './trend.ts'
import { loadWebhookHealth, type WebhookHealth } from './webhook-health.ts'

/** A conversation of the day, as the CSV lists it. */
export interface ReportConversation extends ReportRow {
  campaign: string
  /** Scalar results entries (key, value as text). */
  resultEntries: Array<[string, string]>
}

export interface DailyReport {
  date: string
  timezone: string
  /** The day as [startMs, endMs) in epoch ms. */
  startMs: number
  endMs: number
  generatedAt: number
  totals: Figures
  agents: AgentFigures[]
  campaigns: CampaignFigures[]
  followUps: FollowUps
  batches: BatchSection
  webhooks: WebhookHealth
  /** Seven days ending with `date`, oldest first. */
  trend: TrendDay[]
  change: DayChange
  /** Every conversation of the day (the CSV attachment). */
  conversations: ReportConversation[]
}

export interface BuildReportOptions {
  /** YYYY-MM-DD, a calendar day in `timezone`. */
  date: string
  /** IANA zone; defaults to RECIPES_TIMEZONE. */
  timezone?: string
}

/** The figures of one day in one time zone. A day without calls is a valid, mostly-zero report. */
export async function buildDailyReport(rt: Runtime, options: BuildReportOptions): Promise<DailyReport> {
  const timezone = options.timezone ?? rt.config.recipes.timezone
  parseDate(options.date)
  assertTimeZone(timezone)
  const range = dayRange(options.date, timezone)
  const rows = await loadDayRows(rt, range)

  const conversations: ReportConversation[] = new Array(rows.length)
  const { totals: dayTotals, agents, campaigns } = foldDay(rows, (row, i, results, campaign) => {
    // Extend the row in place: copying 100,000 objects costs more than everything else here.
    const conversation = row as ReportConversation
    conversation.campaign = campaign
    conversation.resultEntries = results
    conversations[i] = conversation
  })
  const [followUps, batches, webhooks, trend] = await Promise.all([
    loadFollowUps(rt, range),
    loadBatchSection(rt, range),
    loadWebhookHealth(rt, range.startMs, range.endMs),
    buildTrend(rt, options.date, timezone, 7, dayTotals),
  ])

  return {
    date: options.date,
    timezone,
    startMs: range.startMs,
    endMs: range.endMs,
    generatedAt: rt.clock.now(),
    totals: dayTotals,
    agents,
    campaigns,
    followUps,
    batches,
    webhooks,
    trend: trend.trend,
    change: trend.change,
    conversations,
  }
}
