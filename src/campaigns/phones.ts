import { getCountryCallingCode, ParseError, type CountryCode } from 'libphonenumber-js/max'
import { parsePhone, phoneParseOptions, type PhoneParseOptions } from './parse-phone.ts'
import { isValidPhoneNumber } from './phone-validity.ts'

/**
 * Phone numbers to E.164 with libphonenumber-js's full ("max") metadata, so a number is accepted only if
 * it is valid for its country, not merely the right length. A failure is a reason, never an exception:
 * contact lists are full of junk and every bad row must be reported, not crash the batch.
 */
export type PhoneResult =
  | { ok: true; e164: string; country: string | undefined }
  | { ok: false; reason: string }

export interface PhoneOptions {
  /** Country for national forms (`98765 43210`, `09876543210`); DEFAULT_COUNTRY. */
  defaultCountry?: string
}

const REASONS: Record<string, string> = {
  NOT_A_NUMBER: 'not a phone number',
  INVALID_COUNTRY: 'no country code, and no default country to read it with',
  TOO_SHORT: 'too short to be a phone number',
  TOO_LONG: 'too long to be a phone number',
  INVALID_LENGTH: 'wrong number of digits',
}

/**
 * Invisible format characters (`\p{Cf}`): bidi marks a right-to-left spreadsheet or a copy from a web page puts around a
 * number (U+202A–U+202E, U+2066–U+2069, U+200E/F), zero-width spaces and joiners, a BOM. They are no part of the number,
 * and a number carrying one did not normalise — so the do-not-call list, which compares normalised numbers, let it by.
 */
const FORMAT_CHARACTERS = /\p{Cf}/gu

/**
 * Spreadsheet artefacts: invisible format characters, a leading apostrophe (forced text), `="…"` (Excel formula), stray
 * quotes; and a `tel:` URI's scheme (a link copied from a page or a CRM).
 */
function clean(raw: string): string {
  let s = raw.replace(FORMAT_CHARACTERS, '').trim()
  s = s.replace(/^tel:/i, '').trim()
  const formula = /^="(.*)"$/.exec(s)
  if (formula) s = formula[1]!
  s = s.replace(/^['‘’`]+/, '').replace(/^"+|"+$/g, '').trim()
  // A numeric column written as decimals (pandas with one empty cell, a spreadsheet's number format): `3012345678.0`.
  // Left as is, the parser reads the dot as a separator and the 0 as one more digit, which can be a valid number.
  const decimal = /^(\+?\d+)\.0+$/.exec(s)
  if (decimal) s = decimal[1]!
  return s
}

const NO_DEFAULT_COUNTRY = phoneParseOptions(undefined)

function tryParse(text: string, options: PhoneParseOptions) {
  try {
    const parsed = parsePhone(text, options)
    return { parsed, error: undefined }
  } catch (error) {
    return { parsed: undefined, error: error instanceof ParseError ? error.message : 'NOT_A_NUMBER' }
  }
}

function isCountryCode(code: string | undefined): code is CountryCode {
  if (!code) return false
  try {
    getCountryCallingCode(code as CountryCode)
    return true
  } catch {
    return false
  }
}

/** One cached normalizer per default country for `normalizePhone` (configuration names one or two). */
const normalizers = new Map<string, PhoneNormalizer>()
const SHARED_CACHE_ENTRIES = 10_000
const MAX_NORMALIZERS = 16

/**
 * Normalizes one number. Pure (same input, same result), so results are cached per default country: a
 * follow-up's number is read by the planner, the scheduler and the do-not-call check, and parsing with full
 * metadata is the expensive step. Results are shared: treat them as read-only.
 */
export function normalizePhone(raw: string | null | undefined, options: PhoneOptions = {}): PhoneResult {
  const key = options.defaultCountry ?? ''
  let normalize = normalizers.get(key)
  if (!normalize) {
    if (normalizers.size >= MAX_NORMALIZERS) normalizers.clear()
    normalize = createPhoneNormalizer({ defaultCountry: options.defaultCountry, maxCacheEntries: SHARED_CACHE_ENTRIES })
    normalizers.set(key, normalize)
  }
  return normalize(raw)
}

const PLAIN = /^\+?\d+$/

/** Resolves the default country once, not per number. */
function compile(defaultCountryOption: string | undefined): (raw: string | null | undefined) => PhoneResult {
  const country = defaultCountryOption?.toUpperCase()
  const defaultCountry = isCountryCode(country) ? country : undefined
  const callingCode = defaultCountry ? getCountryCallingCode(defaultCountry) : undefined
  const options = phoneParseOptions(defaultCountry)
  return (raw) => {
    // Most cells are plain digits (maybe with +): skip the spreadsheet clean-up for them.
    const text = raw && PLAIN.test(raw) ? raw : clean(raw ?? '')
    if (!text) return { ok: false, reason: 'phone number is empty' }
    if (/[a-z]{2,}/i.test(text)) return { ok: false, reason: 'not a phone number (contains letters)' }

    const first = tryParse(text, options)
    const digits = text.replace(/[\s\-().\/]/g, '')
    if (first.parsed && isValidPhoneNumber(first.parsed)) {
      // "0057 301 700 0003" with DEFAULT_COUNTRY=CO: Colombia dials abroad with 00 and a carrier digit (005, 007, 009), so
      // the parser read carrier 5 and country 7 — a Russian number, called. A list writes the default country's own
      // numbers this way (00 + its calling code), and that reading, when valid, is the one meant.
      const own = callingCode && first.parsed.country !== defaultCountry && digits.startsWith(`00${callingCode}`) ? tryParse(`+${digits.slice(2)}`, options).parsed : undefined
      if (own && own.country === defaultCountry && isValidPhoneNumber(own)) return { ok: true, e164: own.number, country: own.country }
      return { ok: true, e164: first.parsed.number, country: first.parsed.country }
    }

    // Alternative readings, each accepted only if it yields a VALID number:
    // "00 91 98765…" (international 00 prefix where the default country dials something else) and
    // "0 91 98765…" (a trunk 0 typed before the country code, common in exported lists).
    const alternatives: string[] = []
    // "(+91) 98765 43210": the + inside brackets, which the parser does not take for the international prefix.
    if (/^\+\d+$/.test(digits) && digits !== text) alternatives.push(digits)
    // "+0919876543210", "+0 91 …": a trunk 0 typed after the +.
    if (/^\+0+[1-9]\d*$/.test(digits)) alternatives.push(`+${digits.replace(/^\+0+/, '')}`)
    if (/^00\d+$/.test(digits)) alternatives.push(`+${digits.slice(2)}`)
    if (callingCode && /^0\d+$/.test(digits)) {
      const rest = digits.replace(/^0+/, '')
      if (rest.startsWith(callingCode)) alternatives.push(`+${rest}`)
    }
    for (const alt of alternatives) {
      const { parsed } = tryParse(alt, options)
      if (parsed && isValidPhoneNumber(parsed)) return { ok: true, e164: parsed.number, country: parsed.country }
    }

    if (first.error === 'INVALID_COUNTRY') {
      // Said as it is: a default country that is none ("India"), or a "+" followed by no country's calling code.
      if (defaultCountryOption && !defaultCountry) return { ok: false, reason: `no country code, and the default country "${defaultCountryOption.slice(0, 40)}" is not an ISO 3166 country code (such as IN)` }
      if (digits.startsWith('+')) return { ok: false, reason: 'no country has the calling code after "+"' }
    }
    if (first.error) return { ok: false, reason: REASONS[first.error] ?? 'not a phone number' }
    const parsed = first.parsed!
    const where = parsed.country ?? `+${parsed.countryCallingCode}`
    return { ok: false, reason: parsed.isPossible() ? `not a valid ${where} number` : `not a valid ${where} number (wrong number of digits)` }
  }
}

export interface PhoneNormalizer {
  (raw: string | null | undefined): PhoneResult
  /** Distinct inputs cached so far. */
  readonly cacheSize: number
}

/**
 * A normalizer bound to a default country, caching each distinct input: parsing with full metadata is
 * the expensive step on large lists, and real lists repeat numbers (re-uploads, duplicates).
 */
export function createPhoneNormalizer(options: PhoneOptions & { maxCacheEntries?: number } = {}): PhoneNormalizer {
  const cache = new Map<string, PhoneResult>()
  const max = options.maxCacheEntries ?? 500_000
  const normalize = compile(options.defaultCountry)
  const fn = ((raw: string | null | undefined) => {
    const key = raw ?? ''
    let hit = cache.get(key)
    if (hit === undefined) {
      hit = normalize(key)
      if (cache.size >= max) cache.clear()
      cache.set(key, hit)
    }
    return hit
  }) as PhoneNormalizer
  Object.defineProperty(fn, 'cacheSize', { get: () => cache.size })
  return fn
}

/** The ISO country of an E.164 number (undefined for non-geographic numbers). */
export function countryOfPhone(e164: string): string | undefined {
  const { parsed } = tryParse(e164, NO_DEFAULT_COUNTRY)
  return parsed?.country
}
