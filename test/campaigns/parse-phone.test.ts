import { describe, expect, it } from 'vitest'
import examples from 'libphonenumber-js/examples.mobile.json'
import { getCountries, getCountryCallingCode, parsePhoneNumberWithError, ParseError, type CountryCode, type PhoneNumber } from 'libphonenumber-js/max'
import { parsePhone, phoneParseOptions } from '../../src/campaigns/parse-phone.ts'

/** What one parse came to, in terms both parsers can be compared on. */
function outcome(parse: () => PhoneNumber): unknown {
  try {
    const n = parse()
    return {
      number: n.number, country: n.country, countryCallingCode: n.countryCallingCode, nationalNumber: n.nationalNumber,
      carrierCode: n.carrierCode, ext: n.ext, possible: n.isPossible(), valid: n.isValid(), type: n.getType(),
    }
  } catch (error) {
    return { error: error instanceof ParseError ? `ParseError ${error.message}` : String(error) }
  }
}

describe('parsePhone: libphonenumber-js/max parsePhoneNumberWithError without its option-copying wrapper', () => {
  it('answers as parsePhoneNumberWithError does, for every country’s numbers in the spellings lists have, and for junk', () => {
    let seed = 7
    const next = () => (seed = (seed * 48271) % 2147483647)
    const spellings = (code: string, national: string) => [
      `+${code}${national}`, national, `0${national}`, `00${code}${national}`, `${code}${national}`, `+${code} ${national.slice(0, 3)}-${national.slice(3)}`,
      `(${national.slice(0, 3)}) ${national.slice(3)}`, `+${code}${national} ext. 12`, `+${code}${national.slice(0, -1)}`, `+${code}${national}${next() % 10}`,
    ]
    const junk = ['', '+', '++91', 'n/a', 'call me', '1', '12', '+12', '+91 1', '123', '+0123456789', `+${'9'.repeat(20)}`, '9'.repeat(251), 'tel:+919876543210', '+91 98765 43210;ext=7', '٩٨٧٦٥٤٣٢١٠', '+91 (0) 98765 43210']
    const defaults: Array<CountryCode | undefined> = [undefined, 'IN', 'US', 'GB', 'DE', 'BR', 'AU']
    let compared = 0
    const kinds = new Set<string>()
    const compare = (text: string, defaultCountry: CountryCode | undefined) => {
      const theirs = outcome(() => parsePhoneNumberWithError(text, { defaultCountry, extract: false }))
      expect(outcome(() => parsePhone(text, phoneParseOptions(defaultCountry))), `${text} (default ${defaultCountry ?? 'none'})`).toEqual(theirs)
      kinds.add('error' in (theirs as object) ? (theirs as { error: string }).error : (theirs as { valid: boolean }).valid ? 'valid' : 'invalid')
      compared++
    }
    for (const country of getCountries()) {
      const example = examples[country]
      if (!example) continue
      const code = getCountryCallingCode(country)
      for (const text of spellings(code, example)) {
        for (const defaultCountry of [undefined, country, defaults[next() % defaults.length]]) {
          compare(text, defaultCountry)
        }
      }
    }
    for (const text of junk) for (const defaultCountry of defaults) compare(text, defaultCountry)
    // Every kind of answer came up, many times over: the comparison is not vacuous.
    expect(compared).toBeGreaterThan(6000)
    for (const kind of ['valid', 'invalid', 'ParseError NOT_A_NUMBER', 'ParseError INVALID_COUNTRY', 'ParseError TOO_SHORT']) expect(kinds).toContain(kind)
  })
})
