import { Cron } from 'croner'
import { WEBHOOK_EVENT_TYPES } from '../upstream/schemas.ts'
import { misreadZone } from '../campaigns/zone-abbreviations.ts'
import type { RecipeDefinition } from './define.ts'

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

function unknownKeysError(unknown: string[]): Error {
  const each = unknown.map((key) => {
    const near = nearestKey(key)
    return `unknown key \`${key}\`${near ? `: did you mean \`${near}\`?` : ''}`
  })
  return new Error(`${each.join('; ')} (a recipe takes ${RECIPE_KEYS.join(', ')})`)
}

/**
 * A `<target>:<type>` subscription names a target that sends events of its own: a misspelled or unconfigured target
 * would otherwise make a recipe that loads, is listed, and never runs. A target of the provider's scheme carries the
 * provider's events, which recipes subscribe to by type alone (`call.no_answer` covers every such target).
 */
function checkTargetEvent(entry: string, targets: Readonly<Record<string, { scheme: string }>>): void {
  const target = entry.slice(0, entry.indexOf(':'))
  const own = Object.keys(targets).filter((name) => targets[name]!.scheme !== 'formant')
  if (own.includes(target)) return
  if (target === 'formant' || Object.hasOwn(targets, target)) {
    throw new Error(`\`on\` lists ${JSON.stringify(entry)}, but target "${target}" carries the provider's events: subscribe to them by type alone, e.g. 'call.no_answer'`)
  }
  const near = own.find((name) => editDistance(name.toLowerCase(), target.toLowerCase()) <= Math.max(2, Math.floor(name.length / 3)))
  const configured = own.length ? `WEBHOOK_TARGETS names ${own.map((n) => `"${n}"`).join(', ')}` : 'WEBHOOK_TARGETS names none'
  throw new Error(`\`on\` lists ${JSON.stringify(entry)}, but no webhook target is named "${target}"${near ? `: did you mean "${near}:${entry.slice(target.length + 1)}"?` : ''} (${configured})`)
}

/**
 * Checks what a recipe file exported. Returns the definition, or throws an Error whose message says
 * what to fix (shown as the recipe's "broken" reason). With `targets` (WEBHOOK_TARGETS), `<target>:<type>` entries
 * must name one of them that sends events of its own.
 */
export function validateRecipe(value: unknown, fallbackTimezone: string, targets?: Readonly<Record<string, { scheme: string }>>): RecipeDefinition {
  if (!value || typeof value !== 'object') {
    throw new Error('no recipe exported: the file must `export default defineRecipe({ description, run, … })`')
  }
  const unknown = Object.keys(value).filter((key) => !Object.hasOwn(KNOWN_KEYS, key))
  if (unknown.length) throw unknownKeysError(unknown)
  const def = value as Partial<Record<keyof RecipeDefinition, unknown>>
  if (typeof def.run !== 'function') throw new Error('`run` must be a function')
  // Required by the contract (RecipeDefinition, DESIGN.md): `recipes list --json`, /admin/recipes and the dashboard show it.
  if (def.description === undefined) {
    throw new Error('`description` is required: a line saying what the recipe does, e.g. description: \'Calls back missed calls\'')
  }
  if (typeof def.description !== 'string' || !def.description.trim()) throw new Error('`description` must be a non-empty string')
  if (def.timezone !== undefined && (typeof def.timezone !== 'string' || !isTimeZone(def.timezone))) {
    throw new Error(`\`timezone\` must be an IANA time zone such as Asia/Kolkata (got ${JSON.stringify(def.timezone)})`)
  }
  // As RECIPES_TIMEZONE: Intl takes EST as UTC−5 all year, so a schedule of 08:00 ran at 09:00 New York time all summer.
  const misread = typeof def.timezone === 'string' ? misreadZone(def.timezone) : undefined
  if (misread) throw new Error(`\`timezone\` "${def.timezone as string}" ${misread}`)
  if (def.schedule !== undefined) {
    if (typeof def.schedule !== 'string' || !def.schedule.trim()) throw new Error('`schedule` must be a cron pattern such as "0 8 * * *"')
    try {
      const cron = cronFor(def.schedule, (def.timezone as string | undefined) ?? fallbackTimezone)
      if (!cron.nextRun()) throw new Error('it never fires')
    } catch (error) {
      throw new Error(`\`schedule\` "${def.schedule}" is not a valid cron pattern: ${(error as Error).message}`)
    }
  }
  if (def.on !== undefined) {
    if (!Array.isArray(def.on)) throw new Error('`on` must be a list of event types, e.g. [\'call.no_answer\']')
    for (const type of def.on) {
      // `<target>:<type>` subscribes to a named target's events; anything else must be a provider event type.
      const targetEvent = typeof type === 'string' && /^[a-z0-9][a-z0-9_-]{0,62}:\S+$/i.test(type)
      if (!targetEvent && !(WEBHOOK_EVENT_TYPES as readonly unknown[]).includes(type)) {
        throw new Error(`\`on\` lists unknown event type ${JSON.stringify(type)} (known: ${WEBHOOK_EVENT_TYPES.join(', ')}, or <target>:<type> for a named target)`)
      }
      if (targetEvent && targets) checkTargetEvent(type, targets)
    }
  }
  return def as RecipeDefinition
}
