import { parseCustom } from 'libphonenumber-js'
import metadata from 'libphonenumber-js/metadata.max.json'
import type { CountryCode, MetadataJson, PhoneNumber } from 'libphonenumber-js/max'

/**
 * The library's own parser with its full ("max") metadata, called without the wrapper `parsePhoneNumberWithError`
 * adds. That wrapper only copies its options to add `v2: true` — through Babel's object-spread helper, which took half
 * of each parse (~5 of ~10 µs a number: a tenth of preparing a 100,000-row list). `parseCustom` is the package's
 * export of the same `parse` taking the metadata as an argument; its typings leave it out, hence the declaration
 * below. test/campaigns/parse-phone.test.ts checks it answers as `parsePhoneNumberWithError` does, number by number.
 */
declare module 'libphonenumber-js' {
  export function parseCustom(text: string, options: PhoneParseOptions, metadata: MetadataJson): PhoneNumber
}

export interface PhoneParseOptions {
  defaultCountry?: CountryCode
  /** false: the whole text must be the number (no "call me on …" extraction). */
  extract?: boolean
  /** The library's switch to its current API: a PhoneNumber, and a ParseError thrown for what is not one. */
  v2: true
}

/** Options for `parsePhone`, built once per default country (one object, not one per number). */
export function phoneParseOptions(defaultCountry: CountryCode | undefined): PhoneParseOptions {
  return defaultCountry ? { defaultCountry, extract: false, v2: true } : { extract: false, v2: true }
}

/** `parsePhoneNumberWithError(text, options)` of libphonenumber-js/max: a PhoneNumber, or a ParseError thrown. */
export function parsePhone(text: string, options: PhoneParseOptions): PhoneNumber {
  return parseCustom(text, options, metadata)
}
