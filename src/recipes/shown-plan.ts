import type { PlannedEffect } from '../effects.ts'
import { keptPlan, type EffectKind, type PlanOmitted } from './kept-plan.ts'

/**
 * An effect as shown — a batch with its first rows and rejected rows, and how many of each were left out; `index` is
 * its place among the effects shown — or, after the last one shown of its kind, how many more of that kind there are.
 */
export type ShownPlanEntry =
  | { effect: PlannedEffect; index: number; omittedRows: number; omittedRejects: number }
  | { omittedKind: EffectKind; omitted: number }

/**
 * `plan` as people are shown it — the CLI's text (src/recipes/present.ts) and the dashboard's page (src/ui/plan.ts):
 * what a run's record keeps (keptPlan: a long batch's first rows, the first effects of each kind), in order, each kind
 * cut followed by how many more it has. `omitted` is what the record already left out (a recorded run's plan).
 */
export function shownPlan(plan: PlannedEffect[], omitted: PlanOmitted = {}): ShownPlanEntry[] {
  const kept = keptPlan(plan, omitted)
  const last = new Map<EffectKind, number>()
  kept.effects.forEach((effect, index) => last.set(effect.kind, index))
  const shown: ShownPlanEntry[] = []
  const more = (kind: EffectKind) => {
    const n = kept.omitted[kind] ?? 0
    if (n > 0) shown.push({ omittedKind: kind, omitted: n })
  }
  kept.effects.forEach((effect, index) => {
    shown.push({
      effect,
      index,
      omittedRows: effect.kind === 'batch' ? (effect.rows_omitted ?? 0) : 0,
      omittedRejects: effect.kind === 'batch' ? (effect.rejects_omitted ?? 0) : 0,
    })
    if (last.get(effect.kind) === index) more(effect.kind)
  })
  // A kind none of whose effects was kept (a record cut to fit MAX_PLAN_CHARS).
  for (const kind of Object.keys(kept.omitted) as EffectKind[]) if (!last.has(kind)) more(kind)
  return shown
}

/** The words for effects of a kind left out: "… and 50 more calls". */
export const OMITTED_WORDS: Record<EffectKind, string> = {
  call: 'calls',
  batch: 'batches',
  mail: 'mails',
  state: 'state changes',
  publish: 'publishes',
  dnc: 'do-not-call changes',
}
