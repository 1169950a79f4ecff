import type { PlannedEffect } from '../effects.ts'

/** The kinds of effect a plan holds: call, batch, mail, state, publish, dnc. */
export type EffectKind = PlannedEffect['kind']

/** How many effects of each kind were left out of a plan, after the ones of that kind it kept. */
export type PlanOmitted = Partial<Record<EffectKind, number>>

/** A plan with its long parts cut: what a run's record keeps and what people are shown. */
export interface KeptPlan {
  /** In order; a cut batch says how many rows (`rows_omitted`) and rejected rows (`rejects_omitted`) it left out. */
  effects: PlannedEffect[]
  omitted: PlanOmitted
}

/**
 * The most rows of a batch (and of its rejected rows) and the most effects of each other kind — calls, mails, state
 * changes, publishes — that a run's record keeps and a plan shows. A nightly batch over 100,000 contacts pushed every
 * row into its run's plan, in a dry run and in a real one: an 11 MB row of `recipe_runs` a night, each listing of runs
 * parsing it (`/admin/recipes/…/runs` answered 226 MB in 3.3 s, the Recipes page took 470 ms). The counts stay whole;
 * a run just made (`recipes run --json`, `recipes test --json`) gives its plan whole.
 */
export const KEPT_ROWS = 500
export const KEPT_EFFECTS = 200

/**
 * The most characters of JSON a run's record keeps for its plan, whatever its effects hold (a batch of wide rows, a
 * large state value): the bounds above halve until the plan fits.
 */
export const MAX_PLAN_CHARS = 1024 * 1024

/** `plan` cut to `rows` rows a batch and `effects` effects a kind, `omitted` (what an earlier cut left out) added to. */
export function keptPlan(plan: PlannedEffect[], omitted: PlanOmitted = {}, rows = KEPT_ROWS, effects = KEPT_EFFECTS): KeptPlan {
  const seen: PlanOmitted = {}
  const left: PlanOmitted = { ...omitted }
  const kept: PlannedEffect[] = []
  for (const effect of plan) {
    const n = (seen[effect.kind] = (seen[effect.kind] ?? 0) + 1)
    if (n > effects) left[effect.kind] = (left[effect.kind] ?? 0) + 1
    else kept.push(effect.kind === 'batch' ? cutBatch(effect, rows) : effect)
  }
  return { effects: kept, omitted: left }
}

function cutBatch(batch: Extract<PlannedEffect, { kind: 'batch' }>, rows: number): PlannedEffect {
  if (batch.rows.length <= rows && batch.rejects.length <= rows) return batch
  const rowsOmitted = (batch.rows_omitted ?? 0) + Math.max(0, batch.rows.length - rows)
  const rejectsOmitted = (batch.rejects_omitted ?? 0) + Math.max(0, batch.rejects.length - rows)
  return {
    ...batch,
    rows: batch.rows.slice(0, rows),
    rejects: batch.rejects.slice(0, rows),
    ...(rowsOmitted > 0 ? { rows_omitted: rowsOmitted } : {}),
    ...(rejectsOmitted > 0 ? { rejects_omitted: rejectsOmitted } : {}),
  }
}

/** How many effects the whole plan had: those kept and those left out. */
export function planSize(plan: KeptPlan): number {
  return plan.effects.length + Object.values(plan.omitted).reduce((a, b) => a + b, 0)
}

/**
 * A run's plan as its record keeps it (the `plan` column): the JSON list of its effects, cut as `keptPlan` cuts, within
 * MAX_PLAN_CHARS (`omitted`: what an earlier cut left out, for a record cut again); null for an empty plan. Whole effects left out are counted on the last kept effect of their kind
 * (`omitted_after`), so the column stays a list of effects that a replica of an earlier version, during a rolling
 * deploy, reads as it always did (a cut batch reads as a shorter one there). Throws what JSON.stringify throws (an
 * effect that is not JSON): the runner records that as the run's failure.
 */
export function encodePlan(plan: PlannedEffect[], omitted: PlanOmitted = {}): string | null {
  if (plan.length === 0 && Object.keys(omitted).length === 0) return null
  const whole = JSON.stringify(withCounts(keptPlan(plan, omitted)))
  if (whole.length <= MAX_PLAN_CHARS) return whole
  // Over: strings past VERY_LONG_STRING are cut first — one cell of a megabyte in a batch's first row otherwise took
  // the place of every other batch of the run — then the bounds halve until the plan fits.
  const veryLong = cutStrings(VERY_LONG_STRING)
  for (let rows = KEPT_ROWS, effects = KEPT_EFFECTS; effects >= 1; rows = Math.max(1, Math.floor(rows / 2)), effects = Math.floor(effects / 2)) {
    const text = JSON.stringify(withCounts(keptPlan(plan, omitted, rows, effects)), veryLong)
    if (text.length <= MAX_PLAN_CHARS) return text
  }
  // One effect of each kind, one row a batch, and still over: the effects hold many long strings (wide rows).
  return JSON.stringify(withCounts(keptPlan(plan, omitted, 1, 1)), cutStrings(LONG_STRING))
}

/** The characters a string of an effect keeps once a plan is over MAX_PLAN_CHARS: 64 KiB, then 1,000 as a last resort. */
const VERY_LONG_STRING = 64 * 1024
const LONG_STRING = 1000

/** A JSON.stringify replacer that cuts strings longer than `max`, saying how much was cut. */
function cutStrings(max: number): (key: string, value: unknown) => unknown {
  return (_key, value) => (typeof value === 'string' && value.length > max ? `${value.slice(0, max)}… (${value.length - max} more characters)` : value)
}

type Counted = PlannedEffect & { omitted_after?: number }

/** The kept effects, each kind's last carrying how many of its kind were left out after it. */
function withCounts(plan: KeptPlan): Counted[] {
  const last = new Map<EffectKind, number>()
  plan.effects.forEach((effect, index) => last.set(effect.kind, index))
  return plan.effects.map((effect, index) => {
    const omitted = plan.omitted[effect.kind] ?? 0
    return omitted > 0 && last.get(effect.kind) === index ? { ...effect, omitted_after: omitted } : effect
  })
}

/**
 * A record's plan. Records written before plans were kept cut (0.19.0 and earlier) hold every effect: they are cut as
 * they are read, so every reader gets a bounded plan, until the recipe history purge rewrites them (retention.ts).
 */
export function decodePlan(text: string | null): KeptPlan {
  if (text === null || text === '') return { effects: [], omitted: {} }
  const omitted: PlanOmitted = {}
  const effects = (JSON.parse(text) as Counted[]).map(({ omitted_after: after, ...effect }) => {
    if (after !== undefined) omitted[effect.kind] = (omitted[effect.kind] ?? 0) + after
    return effect as PlannedEffect
  })
  return keptPlan(effects, omitted)
}
