import type { PlannedEffect } from '../effects.ts'

/**
 * The most rows of a batch (and of its rejected rows) and the most calls a plan shows to people — the CLI's text
 * (src/recipes/present.ts) and the dashboard's page (src/ui/plan.ts): a dry run of a nightly batch over 100,000 contacts
 * printed 100,000 lines and made a 6.6 MB page. The counts stay whole; `--json` gives every row.
 */
export const SHOWN_ROWS = 500
export const SHOWN_CALLS = 200

/**
 * An effect as shown — a batch with its first SHOWN_ROWS rows and rejected rows, and how many of each were left out;
 * `index` is its place in the whole plan — or, where the calls past SHOWN_CALLS were, how many they are.
 */
export type ShownPlanEntry = { effect: PlannedEffect; index: number; omittedRows: number; omittedRejects: number } | { omittedCalls: number }

/** `plan` as people are shown it: in order, long batches cut, the calls past SHOWN_CALLS replaced by their count. */
export function shownPlan(plan: PlannedEffect[]): ShownPlanEntry[] {
  const calls = plan.filter((effect) => effect.kind === 'call').length
  const shown: ShownPlanEntry[] = []
  let callsSeen = 0
  plan.forEach((effect, index) => {
    if (effect.kind === 'call' && ++callsSeen > SHOWN_CALLS) {
      if (callsSeen === SHOWN_CALLS + 1) shown.push({ omittedCalls: calls - SHOWN_CALLS })
      return
    }
    if (effect.kind !== 'batch') {
      shown.push({ effect, index, omittedRows: 0, omittedRejects: 0 })
      return
    }
    shown.push({
      effect: { ...effect, rows: effect.rows.slice(0, SHOWN_ROWS), rejects: effect.rejects.slice(0, SHOWN_ROWS) },
      index,
      omittedRows: Math.max(0, effect.rows.length - SHOWN_ROWS),
      omittedRejects: Math.max(0, effect.rejects.length - SHOWN_ROWS),
    })
  })
  return shown
}
