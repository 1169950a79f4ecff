import { Cron } from 'croner'
import { WEBHOOK_EVENT_TYPES } from '../upstream/schemas.ts'
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
 * Checks what a recipe file exported. Returns the definition, or throws an Error whose message says
 * what to fix (shown as the recipe's "broken" reason).
 */
export function validateRecipe(value: unknown, fallbackTimezone: string): RecipeDefinition {
  if (!value || typeof value !== 'object') {
    throw new Error('no recipe exported: the file must `export default defineRecipe({ description, run, … })`')
  }
  const def = value as Partial<Record<keyof RecipeDefinition, unknown>>
  if (typeof def.run !== 'function') throw new Error('`run` must be a function')
  if (def.description !== undefined && typeof def.description !== 'string') throw new Error('`description` must be a string')
  if (def.timezone !== undefined && (typeof def.timezone !== 'string' || !isTimeZone(def.timezone))) {
    throw new Error(`\`timezone\` must be an IANA time zone such as Asia/Kolkata (got ${JSON.stringify(def.timezone)})`)
  }
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
    }
  }
  return def as RecipeDefinition
}
