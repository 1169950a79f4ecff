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
