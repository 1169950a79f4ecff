import { localParts } from '../utils/time-zone.ts'

/**
 * North American zone abbreviations as CRM exports and people write them, and the zone they mean. Intl accepts some of
 * them as zones of their own — EST is America/Panama and MST America/Phoenix, neither with daylight saving — so a
 * contact marked "EST" was called by UTC−5 all summer, up to 21:59 in New York. Each maps to the zone that keeps the
 * daylight-saving rules the writer meant (MST to Denver: Arizona's own time is America/Phoenix).
 */
const NORTH_AMERICAN: Readonly<Record<string, string>> = {
  EST: 'America/New_York', EDT: 'America/New_York', ET: 'America/New_York', EASTERN: 'America/New_York',
  CST: 'America/Chicago', CDT: 'America/Chicago', CT: 'America/Chicago', CENTRAL: 'America/Chicago',
  MST: 'America/Denver', MDT: 'America/Denver', MT: 'America/Denver', MOUNTAIN: 'America/Denver',
  PST: 'America/Los_Angeles', PDT: 'America/Los_Angeles', PT: 'America/Los_Angeles', PACIFIC: 'America/Los_Angeles',
  AKST: 'America/Anchorage', AKDT: 'America/Anchorage', HST: 'Pacific/Honolulu',
  AST: 'America/Halifax', ADT: 'America/Halifax', NST: 'America/St_Johns', NDT: 'America/St_Johns',
}

/** The zone a North American abbreviation (`EST`, `pdt`, `Eastern`) means, or undefined for anything else. */
export function northAmericanZone(text: string): string | undefined {
  return Object.hasOwn(NORTH_AMERICAN, text.trim().toUpperCase()) ? NORTH_AMERICAN[text.trim().toUpperCase()] : undefined
}

/**
 * For a zone setting (RECIPES_TIMEZONE, a recipe's `timezone`, a report's day): why `zone` will not do, naming the zone
 * to write instead, when it is an abbreviation Intl reads otherwise than its writer meant — `EST` is Panama's UTC−5 all
 * year, not New York's; `AST` is Anchorage, not Halifax — or undefined when it is none, or Intl's reading keeps the
 * meant zone's clock all year (`PST` is Los Angeles to Intl too; `HST` Honolulu, which has no daylight saving).
 */
export function misreadZone(zone: string): string | undefined {
  const meant = northAmericanZone(zone)
  if (!meant) return undefined
  let read: string
  try {
    read = new Intl.DateTimeFormat('en-US', { timeZone: zone }).resolvedOptions().timeZone
  } catch {
    return `is not a zone Intl knows: name the zone, e.g. ${meant}`
  }
  const wall = (tz: string, ms: number) => {
    const p = localParts(ms, tz)
    return `${p.day} ${p.hour}:${p.minute}`
  }
  // A winter and a summer instant: the same wall clock in both is the same time for every purpose here.
  if ([Date.UTC(2026, 0, 15, 12), Date.UTC(2026, 6, 15, 12)].every((ms) => wall(zone, ms) === wall(meant, ms))) return undefined
  return `is an abbreviation Intl reads as ${read}'s time, not ${meant}'s: name the zone, e.g. ${meant}`
}
