import { Cron } from 'croner'
import { WEBHOOK_EVENT_TYPES } from '../upstream/schemas.ts'
import { misreadZone } from '../campaigns/zone-abbreviations.ts'
import type { RecipeDefinition } from './define.ts'
import { targetEventProblem, type WebhookTargets } from '../config/target-event.ts'

export function isTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz })
    return true
  } catch {
    return false
  }
}

/** A croner job with no callback: it never starts a timer, it only answers nextRun/previousRuns. */
export function cronFor(pattern: string, timezone: string): Cron {
  return new Cron(pattern, { timezone })
}

/**
 * Every key of RecipeDefinition, and only those: the Record type refuses a missing or an extra one, so this list
 * cannot drift from the type. Keys are checked at load because TypeScript's excess-property check only covers an
 * object literal written inside `defineRecipe(…)`: `const def = { timeZone: … }; defineRecipe(def)` type-checks,
 * and the misspelled key would be silently ignored (a schedule in the wrong zone, a trigger that never fires).
 */
const KNOWN_KEYS: Record<keyof RecipeDefinition, true> = { description: true, schedule: true, timezone: true, on: true, run: true }
const RECIPE_KEYS = Object.keys(KNOWN_KEYS) as Array<keyof RecipeDefinition>

/** Words people reach for that edit distance would not map to the right key (`cron` is nowhere near `schedule`). */
const ALIASES: Readonly<Record<string, keyof RecipeDefinition>> = {
  cron: 'schedule', crontab: 'schedule', pattern: 'schedule', every: 'schedule', interval: 'schedule', at: 'schedule',
  tz: 'timezone', zone: 'timezone',
  events: 'on', event: 'on', eventtypes: 'on', triggers: 'on', trigger: 'on', subscribe: 'on', subscriptions: 'on', when: 'on',
  handler: 'run', handle: 'run', execute: 'run', exec: 'run', fn: 'run', main: 'run', task: 'run',
  desc: 'description', title: 'description', summary: 'description',
}

/** `timeZone`, `time_zone`, `Time-Zone` all compare as `timezone`. */
const normalizeKey = (key: string) => key.toLowerCase().replace(/[-_\s]/g, '')

function editDistance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const next = [i]
    for (let j = 1; j <= b.length; j++) {
      next[j] = Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1))
    }
    row = next
  }
  return row[b.length]!
}

/** The known key an unknown one most likely meant, if any is close enough to suggest. */
function nearestKey(key: string): keyof RecipeDefinition | undefined {
  const k = normalizeKey(key)
  const exact = RECIPE_KEYS.find((known) => known === k) ?? ALIASES[k]
  if (exact) return exact
  let best: { key: keyof RecipeDefinition; distance: number } | undefined
  for (const known of RECIPE_KEYS) {
    const distance = editDistance(k, known)
    // About one slip per three letters: `schedul`, `descripton`, `in` → `on`; `id` is not `on`.
    if (distance <= Math.max(1, Math.floor(known.length / 3)) && (!best || distance < best.distance)) best = { key: known, distance }
  }
  return best?.key
}

/**
 * A line per unknown key, with the key it most likely meant; the last names the keys a recipe takes (once, not on
 * every line). Joined with "; ", as they read when there was one error for them all.
 */
function unknownKeyProblems(unknown: string[]): string[] {
  return unknown.map((key, i) => {
    const near = nearestKey(key)
    const known = i === unknown.length - 1 ? ` (a recipe takes ${RECIPE_KEYS.join(', ')})` : ''
    return `unknown key \`${key}\`${near ? `: did you mean \`${near}\`?` : ''}${known}`
  })
}

/**
 * A `<target>:<type>` subscription names a target that sends events of its own: a misspelled or unconfigured target
 * would otherwise make a recipe that loads, is listed, and never runs. A target of the provider's scheme carries the
 * provider's events, which recipes subscribe to by type alone (`call.no_answer` covers every such target).
 */
function onEntryProblem(entry: string, targets: WebhookTargets): string | undefined {
  const problem = targetEventProblem(entry, targets)
  if (!problem) return undefined
  const listed = `\`on\` lists ${JSON.stringify(entry)}`
  if (problem.kind === 'provider') return `${listed}, but target "${problem.target}" carries the provider's events: subscribe to them by type alone, e.g. 'call.no_answer'`
  return `${listed}, but no webhook target is named "${problem.target}"${problem.near ? `: did you mean "${problem.near}:${problem.type}"?` : ''} (${problem.configured})`
}

/** What is wrong with `on`: not a list; the entries that are no event type (said together, the known types once); the targets. */
function onProblems(on: unknown, targets: WebhookTargets | undefined): string[] {
  if (on === undefined) return []
  if (!Array.isArray(on)) return ['`on` must be a list of event types, e.g. [\'call.no_answer\']']
  const unknownTypes: unknown[] = []
  const targetProblems: string[] = []
  for (const type of on as unknown[]) {
    // `<target>:<type>` subscribes to a named target's events; anything else must be a provider event type.
    const targetEvent = typeof type === 'string' && /^[a-z0-9][a-z0-9_-]{0,62}:\S+$/i.test(type)
    if (!targetEvent && !(WEBHOOK_EVENT_TYPES as readonly unknown[]).includes(type)) unknownTypes.push(type)
    const problem = targetEvent && targets ? onEntryProblem(type, targets) : undefined
    if (problem) targetProblems.push(problem)
  }
  const listed = unknownTypes.map((type) => JSON.stringify(type)).join(', ')
  const unknown = unknownTypes.length
    ? [`\`on\` lists unknown event type${unknownTypes.length === 1 ? '' : 's'} ${listed} (known: ${WEBHOOK_EVENT_TYPES.join(', ')}, or <target>:<type> for a named target)`]
    : []
  return [...unknown, ...targetProblems]
}

/** Why `schedule` cannot be used, judged in `timezone`; undefined when it can. */
function scheduleProblem(schedule: unknown, timezone: string): string | undefined {
  if (typeof schedule !== 'string' || !schedule.trim()) return '`schedule` must be a cron pattern such as "0 8 * * *"'
  try {
    if (!cronFor(schedule, timezone).nextRun()) return `\`schedule\` "${schedule}" is not a valid cron pattern: it never fires`
  } catch (error) {
    return `\`schedule\` "${schedule}" is not a valid cron pattern: ${(error as Error).message}`
  }
  return undefined
}

/**
 * Every reason what a recipe file exported cannot be used, each saying what to fix; none when it is a usable
 * definition. All of them, not the first: an author fixing a bad schedule, an unknown key and a bad time zone one at a
 * time ran `recipes check` three times to find them (the service's "broken" reason joins them with "; "). With
 * `targets` (WEBHOOK_TARGETS), `<target>:<type>` entries must name one of them that sends events of its own.
 */
export function recipeProblems(value: unknown, fallbackTimezone: string, targets?: WebhookTargets): string[] {
  if (!value || typeof value !== 'object') {
    return ['no recipe exported: the file must `export default defineRecipe({ description, run, … })`']
  }
  const unknown = Object.keys(value).filter((key) => !Object.hasOwn(KNOWN_KEYS, key))
  const problems = unknownKeyProblems(unknown)
  // A key misspelt (`handler` for `run`) is one mistake: its line says which key it meant, so that key is not said
  // missing as well. A key that is there, but wrong, still is.
  const meant = new Set(unknown.map(nearestKey))
  const def = value as Partial<Record<keyof RecipeDefinition, unknown>>
  const missingButMeant = (key: keyof RecipeDefinition) => def[key] === undefined && meant.has(key)
  if (typeof def.run !== 'function' && !missingButMeant('run')) problems.push('`run` must be a function')
  // Required by the contract (RecipeDefinition, DESIGN.md): `recipes list --json`, /admin/recipes and the dashboard show it.
  if (def.description === undefined) {
    if (!missingButMeant('description')) problems.push('`description` is required: a line saying what the recipe does, e.g. description: \'Calls back missed calls\'')
  } else if (typeof def.description !== 'string' || !def.description.trim()) problems.push('`description` must be a non-empty string')
  let zoneOk = true
  if (def.timezone !== undefined && (typeof def.timezone !== 'string' || !isTimeZone(def.timezone))) {
    problems.push(`\`timezone\` must be an IANA time zone such as Asia/Kolkata (got ${JSON.stringify(def.timezone)})`)
    zoneOk = false
  }
  // As RECIPES_TIMEZONE: Intl takes EST as UTC−5 all year, so a schedule of 08:00 ran at 09:00 New York time all summer.
  const misread = zoneOk && typeof def.timezone === 'string' ? misreadZone(def.timezone) : undefined
  if (misread) problems.push(`\`timezone\` "${def.timezone as string}" ${misread}`)
  // A zone refused above is said once: the schedule is judged in the fallback zone, not failed again for the zone.
  const zone = zoneOk && typeof def.timezone === 'string' ? def.timezone : fallbackTimezone
  const schedule = def.schedule === undefined ? undefined : scheduleProblem(def.schedule, zone)
  if (schedule) problems.push(schedule)
  problems.push(...onProblems(def.on, targets))
  return problems
}

/**
 * Checks what a recipe file exported. Returns the definition, or throws an Error whose message says what to fix —
 * every problem recipeProblems finds, joined with "; ".
 */
export function validateRecipe(value: unknown, fallbackTimezone: string, targets?: WebhookTargets): RecipeDefinition {
  const problems = recipeProblems(value, fallbackTimezone, targets)
  if (problems.length) throw new Error(problems.join('; '))
  return value as RecipeDefinition
}
