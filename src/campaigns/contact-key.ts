import { normalizePhone } from './phones.ts'

/** A number already in E.164 form, as the provider writes them: taken as it is (the common case, no parse). */
const E164 = /^\+[1-9]\d{6,14}$/

/**
 * The number a contact is known by, whatever way it was written: its E.164 form when it reads as a phone number
 * (national forms in `defaultCountry`), else the text as written. Conversations keep it beside `contact_number` and the
 * calls ledger beside `customer_phone` (`contact_key`, `customer_key`), so a contact's history is found by one value:
 * by its spellings it missed the calls written another way ("098765 43120" through the proxy, "+919876543120" by a
 * follow-up) and the attempt cap let a fourth call through. `null` only for no number at all.
 */
export function contactKey(raw: string | null | undefined, defaultCountry: string | undefined): string | null {
  if (raw === null || raw === undefined) return null
  if (E164.test(raw)) return raw
  const r = normalizePhone(raw, { defaultCountry })
  return r.ok ? r.e164 : raw
}
