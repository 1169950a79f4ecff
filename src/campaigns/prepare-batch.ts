import type { Runtime } from '../runtime.ts'
import type { BatchRow } from './batch-csv.ts'
import { oversizedCell } from './cell-limit.ts'
import { createDeduper } from './dedupe.ts'
import { loadDncList, type DncList, type DncOptions } from './dnc.ts'
import type { DncOverlay } from './dry-run-dnc.ts'
import { setOwn } from './own-field.ts'
import { createPhoneNormalizer, type PhoneNormalizer } from './phones.ts'
import { PHONE_COLUMN, readContacts, type ContactsSource, type ReadContactsOptions } from './read-contacts.ts'
import type { Reject } from './rejects.ts'

/**
 * Contacts → a clean batch in ONE streaming pass: each row is normalized to E.164, checked against rows
 * already kept (dedupe) and the do-not-call list, then either kept or rejected with its row number, the
 * raw value and the reason. Nothing is dropped silently.
 */
export interface PreparedBatch {
  /** `customer_phone` (E.164) and the other columns, in file order. */
  rows: BatchRow[]
  /** Column order for the batch CSV (customer_phone first). */
  columns: string[]
  rejects: Reject[]
  stats: { read: number; kept: number; invalid: number; duplicates: number; blocked: number; excluded: number }
  /** What was read other than as written (a Latin-1 file transcoded), for the run summary. */
  warnings: string[]
}

export interface PrepareOptions extends ReadContactsOptions {
  defaultCountry?: string
  /** Numbers never to call; default: none (see `prepareBatch` for the table + file). */
  dnc?: DncList
  /** Reuse a normalizer (and its cache) across files. */
  normalizer?: PhoneNormalizer
  /**
   * Numbers to leave out for a reason of the caller's: given each row's number (E.164), the reason to reject it with,
   * or undefined to keep it — a number another file of the same run calls already, say (the shipped nightly-batch
   * does so). Asked after the file's own duplicates and the do-not-call list.
   */
  exclude?: (e164: string) => string | undefined
}

/** The reasons batch cleaning gives for duplicates and do-not-call numbers. */
export const REJECT_REASONS = {
  duplicate: (firstRow: number) => `duplicate of row ${firstRow}`,
  dnc: 'on the do-not-call list',
}

/** Pure over its source: no database, no clock. */
export async function prepareContacts(source: ContactsSource, options: PrepareOptions = {}): Promise<PreparedBatch> {
  const normalize = options.normalizer ?? createPhoneNormalizer({ defaultCountry: options.defaultCountry })
  const dedupe = createDeduper()
  const rows: BatchRow[] = []
  const rejects: Reject[] = []
  const stats = { read: 0, kept: 0, invalid: 0, duplicates: 0, blocked: 0, excluded: 0 }
  const warnings: string[] = []
  let columns: string[] | undefined
  const onWarning = (message: string) => {
    warnings.push(message)
    options.onWarning?.(message)
  }
  for await (const contact of readContacts(source, { ...options, onWarning })) {
    stats.read++
    columns ??= [PHONE_COLUMN, ...Object.keys(contact.fields).filter((c) => c !== PHONE_COLUMN)]
    const phone = normalize(contact.phone)
    if (!phone.ok) {
      stats.invalid++
      rejects.push({ row: contact.row, raw: contact.phone, reason: phone.reason })
      continue
    }
    // Before dedupe: a row that cannot go out leaves its number to a later row.
    const oversized = oversizedCell(contact.fields)
    if (oversized) {
      stats.invalid++
      rejects.push({ row: contact.row, raw: contact.phone, reason: oversized })
      continue
    }
    const first = dedupe.firstSeen(phone.e164, contact.row)
    if (first !== undefined) {
      stats.duplicates++
      rejects.push({ row: contact.row, raw: contact.phone, reason: REJECT_REASONS.duplicate(first) })
      continue
    }
    if (options.dnc?.has(phone.e164)) {
      stats.blocked++
      rejects.push({ row: contact.row, raw: contact.phone, reason: REJECT_REASONS.dnc })
      continue
    }
    const excluded: unknown = options.exclude?.(phone.e164)
    if (excluded !== undefined && excluded !== null) {
      stats.excluded++
      rejects.push({ row: contact.row, raw: contact.phone, reason: String(excluded) || 'excluded' })
      continue
    }
    const row: BatchRow = { [PHONE_COLUMN]: phone.e164 }
    for (const key of Object.keys(contact.fields)) if (key !== PHONE_COLUMN) setOwn(row, key, contact.fields[key]!)
    rows.push(row)
    stats.kept++
  }
  return { rows, columns: columns ?? [PHONE_COLUMN], rejects, stats, warnings }
}

/**
 * `prepareContacts` with DEFAULT_COUNTRY and the do-not-call table + file of the running service. The file's
 * national-form numbers are read in the contacts' country: with `defaultCountry: 'US'` a DNC line
 * `(415) 555-0123` is the +1 number the contact `415-555-0123` becomes, not an invalid Indian one.
 */
export async function prepareBatch(
  rt: Runtime,
  source: ContactsSource,
  options: Omit<PrepareOptions, 'dnc'> & { dnc?: DncOptions } = {},
  /** A recipe's dry run: its own changes to the do-not-call table so far (src/campaigns/dry-run-dnc.ts). */
  overlay?: DncOverlay,
): Promise<PreparedBatch> {
  const defaultCountry = options.defaultCountry ?? rt.config.defaultCountry
  const dnc = await loadDncList(rt, { ...options.dnc, defaultCountry: options.dnc?.defaultCountry ?? defaultCountry }, overlay)
  return prepareContacts(source, { ...options, defaultCountry, dnc })
}
