import type { ReportRow } from './day-rows.ts'

/** Label of conversations that no batch, recipe or campaign parameter claims. */
export const DIRECT_CAMPAIGN = '(direct)'

/** Reads one call parameter from the stored JSON (the webhook's object form or the request's array form). */
export function callParameter(json: string | null, name: string): string | undefined {
  // Most rows carry no such parameter: skip the parse (this runs for every row of a 100,000-call day).
  if (!json || !json.includes(`"${name}"`)) return undefined
  let value: unknown
  try {
    value = JSON.parse(json)
  } catch {
    return undefined
  }
  if (Array.isArray(value)) {
    const hit = value.find((p): p is { name: string; value: unknown } => typeof p === 'object' && p !== null && (p as { name?: unknown }).name === name)
    return hit && typeof hit.value === 'string' && hit.value ? hit.value : undefined
  }
  if (value && typeof value === 'object') {
    const v = (value as Record<string, unknown>)[name]
    return typeof v === 'string' && v ? v : undefined
  }
  return undefined
}

/** The key a chain of direct calls is grouped under: the agent of its first call (src/campaigns/plan-follow-ups.ts). */
const DIRECT_CHAIN = /^agent:\d+$/

/**
 * A ledger row's campaign as people read it. Follow-ups of a call that no batch, recipe or campaign parameter
 * claims are grouped (for the attempt cap and their idempotency keys) under `agent:<id>`, the agent of the call they
 * follow, and the ledger keeps that key; shown, they stay with the call they follow, under "(direct)" — whichever
 * agent places them (a recipe's FOLLOW_UP_AGENT_ID: it was shown as a campaign named `agent:101`).
 */
function shownCampaign(campaign: string | null): string | null {
  return campaign !== null && DIRECT_CHAIN.test(campaign) ? DIRECT_CAMPAIGN : campaign
}

/**
 * The campaign a call counts under: the ledger's campaign (batch or recipe campaign) for calls switchboard placed,
 * else the recipe that placed it, else a `campaign` call parameter (read only when needed), else "(direct)".
 */
export function campaignFrom(campaign: string | null, recipe: string | null, parameter: () => string | undefined): string {
  return shownCampaign(campaign) || recipe || parameter() || DIRECT_CAMPAIGN
}

/** The campaign a conversation of the report belongs to (see `campaignFrom`). */
export function campaignOf(row: ReportRow): string {
  return campaignFrom(row.call_campaign, row.call_recipe, () => callParameter(row.call_parameters, 'campaign'))
}
