import type { Figures } from './figures.ts'

/**
 * The most agents or campaigns the report mail lists, busiest first; the rest are counted in one line. A campaign is
 * whatever the calls were given (a `campaign` column of a batch, a recipe's option): one per row — a customer id put
 * in that column — made a table of 100,000 campaigns, a mail of tens of megabytes. Every conversation, with its
 * campaign, stays in the CSV.
 */
export const GROUPS_IN_MAIL = 25

/** The first `max` groups (they come busiest first), and how many groups and calls the rest hold. */
export function shownGroups<T extends { figures: Figures }>(groups: T[], max: number): { shown: T[]; more: { groups: number; calls: number } } {
  const rest = groups.slice(max)
  return { shown: groups.slice(0, max), more: { groups: rest.length, calls: rest.reduce((sum, g) => sum + g.figures.calls, 0) } }
}
