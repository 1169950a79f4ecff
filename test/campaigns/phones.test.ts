import { describe, expect, it } from 'vitest'
import examples from 'libphonenumber-js/examples.mobile.json'
import { getCountries, getCountryCallingCode, parsePhoneNumberFromString } from 'libphonenumber-js/max'
import { countryOfPhone, createPhoneNormalizer, normalizePhone } from '../../src/campaigns/index.ts'
import { isValidPhoneNumber } from '../../src/campaigns/phone-validity.ts'

describe('normalizePhone (DEFAULT_COUNTRY=IN)', () => {
  const IN = { defaultCountry: 'IN' }
  it.each([
    ['9876543210', 'national mobile'],
    ['09876543210', 'national with trunk 0'],
    ['919876543210', 'country code without +'],
    ['0919876543210', 'trunk 0 before the country code'],
    ['00919876543210', '00 international prefix'],
    ['+91 98765-43210', 'formatted international'],
    ["'9876543210", 'spreadsheet apostrophe'],
    ["'+91 98765 43210", 'apostrophe before +'],
    ['="09876543210"', 'Excel formula wrapper'],
    ['  98765 43210  ', 'padded'],
    // Each of these did not normalise, so the do-not-call list (which compares normalised numbers) let it by.
    ['\u202D+91 98765 43210\u202C', 'bidi marks around it (a right-to-left sheet, a copy from a page)'],
    ['98765\u200B43210\uFEFF', 'a zero-width space and a BOM inside'],
    ['tel:+919876543210', 'a tel: link'],
    ['TEL: 98765 43210', 'a tel: link, national'],
    ['(+91) 98765 43210', 'the + inside brackets'],
    ['+0919876543210', 'a trunk 0 typed after the +'],
    ['+0 91 98765 43210', 'a trunk 0 typed after the +, spaced'],
  ])('%s (%s) → +919876543210', (raw) => {
    expect(normalizePhone(raw, IN)).toEqual({ ok: true, e164: '+919876543210', country: 'IN' })
  })

  it('reads a number written as a decimal (a numeric column exported with .0) as the number, not with the 0 as a digit', () => {
    expect(normalizePhone('3012345678.0', { defaultCountry: 'DE' })).toEqual({ ok: true, e164: '+493012345678', country: 'DE' })
    expect(normalizePhone('6641234567.0', { defaultCountry: 'AT' })).toEqual({ ok: true, e164: '+436641234567', country: 'AT' })
    expect(normalizePhone('919876543210.00', IN)).toEqual({ ok: true, e164: '+919876543210', country: 'IN' })
    // Only a zero fraction is a spreadsheet's: any other is not a phone number.
    expect(normalizePhone('9876543210.5', IN).ok).toBe(false)
  })

  it("reads 00 + the default country's own calling code as that country's number, where its carrier prefixes would read another country", () => {
    // Colombia dials abroad with 005/007/009: "0057 301…" parsed as carrier 5 + Russia, and was called in Russia.
    const CO = { defaultCountry: 'CO' }
    expect(normalizePhone('0057 301 700 0003', CO)).toEqual({ ok: true, e164: '+573017000003', country: 'CO' })
    expect(normalizePhone('00573017000003', CO)).toEqual({ ok: true, e164: '+573017000003', country: 'CO' })
    // A carrier prefix before another country's code is still that country's number.
    expect(normalizePhone('005 7 916 123 4567', CO)).toEqual({ ok: true, e164: '+79161234567', country: 'RU' })
    expect(normalizePhone('0055 11 98765 4321', { defaultCountry: 'BR' })).toEqual({ ok: true, e164: '+5511987654321', country: 'BR' })
  })

  it('reads a +1 number whatever the default country', () => {
    expect(normalizePhone('+1 (213) 373-4253', IN)).toEqual({ ok: true, e164: '+12133734253', country: 'US' })
    expect(normalizePhone('(213) 373-4253', { defaultCountry: 'US' })).toEqual({ ok: true, e164: '+12133734253', country: 'US' })
  })

  it.each([
    ['+', 'not a phone number'],
    ['', 'phone number is empty'],
    ['   ', 'phone number is empty'],
    ["'", 'phone number is empty'],
    ['abc', 'not a phone number (contains letters)'],
    ['call me', 'not a phone number (contains letters)'],
    ['12345', 'not a valid IN number (wrong number of digits)'],
    ['98765432101234', 'not a valid IN number (wrong number of digits)'],
    // Right length, but no Indian number range starts like this: only strict metadata rejects them.
    ['5000000000', 'not a valid IN number'],
    ['0000000000', 'not a valid IN number'],
    ['+1 213 111 4253', 'not a valid +1 number'],
    ['+91 12345', 'not a valid IN number (wrong number of digits)'],
    // A default country is set: the "+" is what is wrong, not a missing default.
    ['+0 123', 'no country has the calling code after "+"'],
  ])('rejects %j with a reason', (raw, reason) => {
    expect(normalizePhone(raw, IN)).toEqual({ ok: false, reason })
  })

  it('never throws, whatever it is given', () => {
    for (const raw of [null, undefined, '+++', '00', '0', '+0000000000', '=', '"', '\u0000', 'x'.repeat(10_000), '9'.repeat(500)]) {
      const result = normalizePhone(raw as string, IN)
      expect(result.ok).toBe(false)
      if (!result.ok) expect(result.reason).toMatch(/\w/)
    }
  })

  it('a default country that is no country is named in the reason', () => {
    expect(normalizePhone('98765 43210', { defaultCountry: 'India' })).toEqual({
      ok: false,
      reason: 'no country code, and the default country "India" is not an ISO 3166 country code (such as IN)',
    })
  })

  it('without a default country, a national number cannot be read', () => {
    expect(normalizePhone('9876543210')).toMatchObject({ ok: false })
    expect(normalizePhone('+919876543210')).toMatchObject({ ok: true, e164: '+919876543210' })
  })

  it('the cached normalizer gives the same answers and caches each distinct input once', () => {
    const normalize = createPhoneNormalizer(IN)
    expect(normalize('09876543210')).toEqual(normalizePhone('09876543210', IN))
    expect(normalize('09876543210')).toEqual(normalizePhone('09876543210', IN))
    expect(normalize('+')).toEqual(normalizePhone('+', IN))
    expect(normalize.cacheSize).toBe(2)
  })

  it('normalizePhone remembers answers per default country: the same national number reads differently under another', () => {
    for (let i = 0; i < 2; i++) {
      expect(normalizePhone('09876543210', IN)).toMatchObject({ ok: true, e164: '+919876543210' })
      expect(normalizePhone('09876543210', { defaultCountry: 'GB' })).toMatchObject({ ok: false })
      expect(normalizePhone('2133734253', { defaultCountry: 'US' })).toMatchObject({ ok: true, e164: '+12133734253' })
      expect(normalizePhone('2133734253', IN)).not.toMatchObject({ e164: '+12133734253' })
      expect(normalizePhone('9876543210')).toMatchObject({ ok: false })
    }
  })

  it('finds the country of an E.164 number', () => {
    expect(countryOfPhone('+442079460018')).toBe('GB')
    expect(countryOfPhone('+12133734253')).toBe('US')
  })
})

describe('isValidPhoneNumber: the answer of libphonenumber-js isValid(), with compiled patterns', () => {
  it('agrees with PhoneNumber.isValid() on every country’s example numbers and altered copies of them', () => {
    let seed = 1
    const next = () => (seed = (seed * 48271) % 2147483647)
    let compared = 0
    let valid = 0
    for (const country of getCountries()) {
      const example = examples[country]
      const variants = new Set<string>()
      if (example) {
        variants.add(example)
        for (let i = 0; i < example.length; i++) {
          variants.add(example.slice(0, i) + String(next() % 10) + example.slice(i + 1))
          variants.add(example.slice(0, i) + example.slice(i + 1))
        }
        variants.add(`${example}${next() % 10}`)
      }
      for (let length = 4; length <= 13; length++) {
        variants.add(Array.from({ length }, () => String(next() % 10)).join(''))
      }
      for (const national of variants) {
        const parsed = parsePhoneNumberFromString(`+${getCountryCallingCode(country)}${national}`)
        if (!parsed) continue
        expect(isValidPhoneNumber(parsed), `${country} ${parsed.number}`).toBe(parsed.isValid())
        compared++
        if (parsed.isValid()) valid++
      }
    }
    // Both answers occur plenty of times: the comparison is not vacuous.
    expect(compared).toBeGreaterThan(5000)
    expect(valid).toBeGreaterThan(500)
    expect(compared - valid).toBeGreaterThan(2000)
  })
})
