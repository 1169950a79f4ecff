import { OMITTED_WORDS, shownPlan } from './shown-plan.ts'
import { planSize, type PlanOmitted } from './kept-plan.ts'
import type { PlannedEffect } from '../effects.ts'
import type { RecipeInfo } from './engine.ts'
import type { RecipeRun } from './runner.ts'
import { summaryLine } from './summary.ts'
import { isStranded, type QueueCounts } from './queue-control.ts'
import { campaignFrom } from '../reports/campaign.ts'
import { printableLines } from '../utils/printable.ts'

const iso = (ms: number | null | undefined) => (ms === null || ms === undefined ? null : new Date(ms).toISOString())

/** A recipe listing as JSON (CLI --json and GET /admin/recipes): times as ISO 8601. */
export function recipeInfoJson(info: RecipeInfo, queue: QueueCounts = { queued: 0, dead: 0 }) {
  return {
    name: info.name,
    description: info.description,
    file: info.file,
    schedule: info.schedule,
    timezone: info.timezone,
    on: info.on,
    broken: info.broken,
    next_run: iso(info.nextRun),
    last_run: info.lastRun
      ? {
          id: info.lastRun.id,
          trigger: info.lastRun.trigger,
          status: info.lastRun.status,
          started_at: iso(info.lastRun.startedAt),
          ended_at: iso(info.lastRun.endedAt),
          summary: info.lastRun.summary,
          error: info.lastRun.error,
        }
      : null,
    /** Its event queue: waiting for a run, and given up on (`recipes retry` runs them again). */
    queue,
    /** True for a recipe no longer in RECIPES_DIR that events still wait for (listed so they can be given up). */
    removed: false,
  }
}

/** Recipes whose file is gone while events still wait for them: nothing runs those (`recipes discard`). */
export function removedRecipes(infos: readonly RecipeInfo[], queues: ReadonlyMap<string, QueueCounts>): Array<[string, QueueCounts]> {
  return [...queues].filter(([name, q]) => !infos.some((r) => r.name === name) && isStranded(undefined, q))
}

/**
 * The recipes listing as JSON (`recipes list --json`, `GET /admin/recipes`): every recipe in RECIPES_DIR, then every
 * removed one that events still wait for, in the same shape (`removed: true`, no file, nothing scheduled).
 */
export function recipeListingJson(infos: readonly RecipeInfo[], queues: ReadonlyMap<string, QueueCounts>) {
  return [
    ...infos.map((info) => recipeInfoJson(info, queues.get(info.name))),
    ...removedRecipes(infos, queues).map(([name, queue]) => ({
      name, description: null, file: null, schedule: null, timezone: null, on: [], broken: null, next_run: null, last_run: null, queue, removed: true,
    })),
  ]
}

export function runJson(run: RecipeRun) {
  return {
    id: run.id,
    recipe: run.recipe,
    trigger: run.trigger,
    event_id: run.eventId,
    dry_run: run.dryRun,
    status: run.status,
    started_at: iso(run.startedAt),
    ended_at: iso(run.endedAt),
    summary: run.summary,
    error: run.error,
    plan: run.plan,
    // A recorded run's plan is kept cut (src/recipes/kept-plan.ts): the effects of each kind it left out.
    ...(Object.keys(run.planOmitted).length > 0 ? { plan_omitted: run.planOmitted } : {}),
  }
}

function phoneOf(effect: Extract<PlannedEffect, { kind: 'call' }>): string {
  return effect.request.parameters.find((p) => p.name === 'customer_phone')?.value ?? '(no customer_phone)'
}

/**
 * The plan for people: each batch with its rows and rejects, each call, each mail — a long plan's start (shownPlan).
 * `omitted`: what a run's record left out of it (src/recipes/kept-plan.ts).
 */
export function renderPlan(plan: PlannedEffect[], omitted: PlanOmitted = {}): string {
  const size = planSize({ effects: plan, omitted })
  if (size === 0) return 'plan: nothing (no call, batch or mail)\n'
  const lines: string[] = [`plan: ${size} side effect${size === 1 ? '' : 's'}`]
  const more = (n: number, what: string, indent: string) => {
    if (n > 0) lines.push(`${indent}… and ${n} more ${what}, not shown (--json prints them all)`)
  }
  for (const entry of shownPlan(plan, omitted)) {
    if ('omittedKind' in entry) {
      more(entry.omitted, OMITTED_WORDS[entry.omittedKind], '  ')
      continue
    }
    const { effect } = entry
    if (effect.kind === 'batch') {
      const rows = effect.rows.length + entry.omittedRows
      lines.push(`  batch "${effect.name}" for agent ${effect.agent_id}: ${rows} row${rows === 1 ? '' : 's'}, ${effect.rejects.length + entry.omittedRejects} rejected`)
      for (const row of effect.rows) lines.push(`    ${JSON.stringify(row)}`)
      more(entry.omittedRows, 'rows', '    ')
      for (const r of effect.rejects) lines.push(`    rejected row ${r.row}: ${JSON.stringify(r.raw)} — ${r.reason}`)
      more(entry.omittedRejects, 'rejected rows', '    ')
    } else if (effect.kind === 'call') {
      const r = effect.request
      const when = r.scheduled_for ? `at ${r.scheduled_for}` : 'now'
      lines.push(`  call ${phoneOf(effect)} with agent ${r.agent_id} ${when}${effect.note ? ` (${effect.note})` : ''}`)
      lines.push(`    idempotency_key: ${r.idempotency_key ?? '(auto)'}${r.conversation_id ? ` · continues ${r.conversation_id}` : ''}${effect.campaign ? ` · campaign ${campaignFrom(effect.campaign, null, () => undefined)}` : ''}`)
      const params = r.parameters.filter((p) => p.name !== 'customer_phone')
      if (params.length) lines.push(`    parameters: ${JSON.stringify(Object.fromEntries(params.map((p) => [p.name, p.value])))}`)
      if (r.retry_context) lines.push(`    retry_context: ${JSON.stringify(r.retry_context)}`)
    } else if (effect.kind === 'state') {
      lines.push(effect.action === 'set' ? `  state ${JSON.stringify(effect.key)} = ${effect.value ?? 'null'} (kept for this dry run only)` : `  state ${JSON.stringify(effect.key)} deleted (for this dry run only)`)
    } else if (effect.kind === 'publish') {
      lines.push(`  publish ${effect.event_type} (${effect.event_id}) to ${effect.destinations.length ? effect.destinations.join(', ') : 'no destination'}`)
    } else if (effect.kind === 'dnc') {
      lines.push(effect.action === 'add' ? `  do-not-call: add ${effect.phone}${effect.reason ? ` (${effect.reason})` : ''}` : `  do-not-call: remove ${effect.phone}`)
    } else {
      lines.push(`  mail to ${effect.to.join(', ')}: "${effect.subject}"${effect.attachments?.length ? ` (attachments: ${effect.attachments.join(', ')})` : ''}`)
    }
  }
  // Rows, rejects, names and notes quote a CSV or a webhook: nothing in them steers the terminal or forges a line.
  return printableLines(lines)
}

export function renderRun(run: RecipeRun): string {
  const took = run.endedAt !== null ? `${run.endedAt - run.startedAt} ms` : 'still running'
  const lines = [
    `recipe ${run.recipe}: ${run.status}${run.dryRun ? ' (dry run: nothing was called, launched or mailed)' : ''} · ${run.trigger} · ${iso(run.startedAt)} · ${took}`,
  ]
  if (run.error) lines.push(`error: ${run.error}`)
  if (run.summary !== null && run.summary !== undefined) lines.push(`summary: ${summaryLine(run.summary)}`)
  return printableLines(lines) + renderPlan(run.plan, run.planOmitted)
}
