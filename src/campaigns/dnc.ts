import { existsSync } from 'node:fs'
import { unreadableFileProblem } from '../utils/unreadable-file.ts'
import { readFile, stat } from 'node:fs/promises'
import { join } from 'node:path'
import type { Runtime } from '../runtime.ts'
import { defineProcessingTask } from '../coordination/processing-task.ts'
import { parse } from 'csv-parse/sync'
import type { CountryCode } from 'libphonenumber-js/max'
import { Counter } from 'prom-client'
import type { WebhookEvent } from '../upstream/schemas.ts'
import { createPhoneNormalizer, normalizePhone } from './phones.ts'
import { firstDelimiter } from './csv-delimiter.ts'
import { decodeCsvText, NotTextError } from './csv-encoding.ts'
import { parsePhone, phoneParseOptions } from './parse-phone.ts'
import { defineMetrics } from '../utils/define-metrics.ts'
import { printable } from '../utils/printable.ts'
import { scheduledWithProvider } from '../calls/scheduled-with-provider.ts'
import { tableLists, withOverlay, type DncOverlay } from './dry-run-dnc.ts'

/**
 * Do-not-call: the `dnc` table (numbers added by results or by hand) plus an optional file kept by the
 * customer (one number per line, or a CSV whose first column is the number). Every entry is E.164, so a
 * number matches however it was written.
 */
export interface DncOptions {
  /** A file of numbers; default `$DATA_DIR/dnc.csv` when it exists. `false` for none. */
  file?: string | false
  /**
   * The country the file's numbers written without a country code (`(415) 555-0123`) belong to, and
   * `isBlocked`'s number; default DEFAULT_COUNTRY. `prepareBatch` and `runFollowUps` pass the country they
   * read contacts in: a list kept for US contacts is read as US numbers when those contacts are.
   */
  defaultCountry?: string
}

/** A snapshot for checking many numbers at once (a batch), without a query per row. */
export interface DncList {
  has(e164: string): boolean
  readonly size: number
}

/** The do-not-call file a service with this data folder reads by default. */
export function defaultDncFile(rt: { config: { dataDir: string } }): string {
  return join(rt.config.dataDir, 'dnc.csv')
}

/**
 * Parsed files by path and country: the same file read for contacts of two countries is two sets (its
 * national-form lines mean other numbers), and keeping both means campaigns for either do not re-read it
 * in turn. A handful of files times a handful of countries.
 */
const fileCache = new Map<string, { version: string; numbers: Set<string> }>()
const MAX_CACHED_FILES = 32

/**
 * Numbers in a DNC file, normalized (national forms as numbers of `defaultCountry`); lines that are not
 * numbers (a header, notes) are skipped. Re-read only when the file changes (size or modification time),
 * since it is checked before every call.
 */
export async function readDncFile(path: string, defaultCountry: string, warn: (message: string) => void = () => {}): Promise<Set<string>> {
  try {
    return await readDncFileOnce(path, defaultCountry, warn)
  } catch (error) {
    throw dncFileError(path, error)
  }
}

/**
 * The do-not-call file could not be read (a directory, no permission, a workbook): every call must stop, and whoever
 * reads the error — a batch's run, the proxy's answer, the log — is told which file and why, in one sentence.
 */
export class DncFileError extends Error {
  override readonly name = 'DncFileError'
  constructor(
    readonly file: string,
    message: string,
    options?: { cause: unknown },
  ) {
    super(message, options)
  }
}

function dncFileError(path: string, error: unknown): DncFileError {
  if (error instanceof DncFileError) return error
  // "…/dnc.csv is not a CSV file: it looks like a ZIP archive …" names the file already.
  if (error instanceof NotTextError) return new DncFileError(path, `the do-not-call file ${error.message}`, { cause: error })
  const code = (error as NodeJS.ErrnoException).code
  // Another user's file (or folder): whose it is and the ways out.
  const denied = code === 'EACCES' || code === 'EPERM' ? unreadableFileProblem(path) : undefined
  if (denied) return new DncFileError(path, `the do-not-call file ${denied}`, { cause: error })
  const why =
    code === 'EISDIR' ? IS_A_DIRECTORY : code === 'EACCES' || code === 'EPERM' ? 'permission denied' : code === 'ENOENT' ? 'it was removed while being read' : (error as Error).message
  return new DncFileError(path, unreadable(path, why), { cause: error })
}

const IS_A_DIRECTORY = 'it is a directory, not a file'
const unreadable = (path: string, why: string) => `the do-not-call file ${path} cannot be read: ${why}`

async function readDncFileOnce(path: string, defaultCountry: string, warn: (message: string) => void): Promise<Set<string>> {
  const info = await stat(path)
  if (info.isDirectory()) throw new DncFileError(path, unreadable(path, IS_A_DIRECTORY))
  const key = `${defaultCountry.toUpperCase()}\0${path}`
  const version = `${info.size}:${info.mtimeMs}`
  const cached = fileCache.get(key)
  if (cached?.version === version) return cached.numbers
  const numbers = await parseDncFile(path, defaultCountry, warn)
  // A bound all the same: the country comes from a recipe's options.
  if (fileCache.size >= MAX_CACHED_FILES && !cached) fileCache.clear()
  fileCache.set(key, { version, numbers })
  return numbers
}

/**
 * The file's numbers. Decoded as the contacts files are (src/campaigns/csv-encoding.ts): a spreadsheet's "Unicode
 * Text" export is UTF-16, and read as UTF-8 not one of its lines was a number — the whole list silently ignored. A
 * file that is not text at all (a workbook) is an error, not an empty list. Lines that are not numbers but a first one
 * with no digit (a header) are counted and logged once per version of the file, with an example.
 */
async function parseDncFile(path: string, defaultCountry: string, warn: (message: string) => void): Promise<Set<string>> {
  const normalize = createPhoneNormalizer({ defaultCountry })
  const numbers = new Set<string>()
  const text = await decodeCsvText(await readFile(path), { name: path, onWarning: warn })
  let skipped = 0
  let example: string | undefined
  for (const [index, line] of text.replace(/^\uFEFF/, '').split(/\r\n|\r|\n/).entries()) {
    const cell = line.split(/[,;\t]/)[0]?.trim()
    if (!cell) continue
    const result = normalize(cell)
    if (result.ok) numbers.add(result.e164)
    // The first line is a header only when it holds no digit: "1 (415) 555-0196" there, not a number by DEFAULT_COUNTRY,
    // was taken for one and left off without a word.
    else if (index > 0 || /\d/.test(cell)) {
      skipped++
      example ??= `line ${index + 1}: ${JSON.stringify(cell.slice(0, 40))} (${result.reason})`
    }
  }
  if (skipped > 0) warn(`${path}: ${skipped} line${skipped === 1 ? ' is' : 's are'} not a phone number and not on the do-not-call list, e.g. ${example}`)
  return numbers
}

const dncWarning = (rt: Runtime) => (message: string) => rt.log.warn(message)

function fileOf(rt: Runtime, options: DncOptions): string | undefined {
  if (options.file === false) return undefined
  if (options.file) return options.file
  const fallback = defaultDncFile(rt)
  return existsSync(fallback) ? fallback : undefined
}

function countryOf(rt: Runtime, options: DncOptions): string {
  return options.defaultCountry ?? rt.config.defaultCountry
}

/** `overlay`: a dry run's own changes to the table so far (src/campaigns/dry-run-dnc.ts). */
export async function loadDncList(rt: Runtime, options: DncOptions = {}, overlay?: DncOverlay): Promise<DncList> {
  const numbers = new Set<string>()
  const rows = await rt.store.db.selectFrom('dnc').select('phone').execute()
  for (const row of rows) numbers.add(row.phone)
  withOverlay(numbers, overlay)
  const file = fileOf(rt, options)
  if (file) for (const n of await readDncFile(file, countryOf(rt, options), dncWarning(rt))) numbers.add(n)
  return { has: (e164) => numbers.has(e164), size: numbers.size }
}

/** The reason an opt-out read from a call's results is listed with. */
export const OPT_OUT_REASON = 'results asked not to be called'

/** Whether the table (not the file) lists `e164`. */
export async function tableHas(rt: Runtime, e164: string): Promise<boolean> {
  return (await rt.store.db.selectFrom('dnc').select('phone').where('phone', '=', e164).executeTakeFirst()) !== undefined
}

/**
 * What the list is asked for a number: its E.164 form; one that does not normalise as given (`+91 98765 43210 ext 1`,
 * `+919876543210;`) as written, and the number within it, as an opt-out lists it (optOutFromEvent) — the provider
 * may dial what it reads there, and the list was asked only for the text as written, which it never holds.
 */
export function dncKeysOf(phone: string, defaultCountry: string): string[] {
  const normalized = normalizePhone(phone, { defaultCountry })
  if (normalized.ok) return [normalized.e164]
  const within = numberWithin(phone, defaultCountry)
  return within === undefined || within === phone ? [phone] : [phone, within]
}

/** Checks one number against the table and the file (see `dncKeysOf` for one that does not normalise). */
export async function isBlocked(rt: Runtime, phone: string, options: DncOptions = {}, overlay?: DncOverlay): Promise<boolean> {
  const keys = dncKeysOf(phone, countryOf(rt, options))
  for (const key of keys) {
    if (await tableLists(overlay, key, () => tableHas(rt, key))) return true
  }
  const file = fileOf(rt, options)
  if (!file) return false
  const listed = await readDncFile(file, countryOf(rt, options), dncWarning(rt))
  return keys.some((key) => listed.has(key))
}

/** Which of `phones` (already E.164) are on the do-not-call list: one query per 500 numbers, the file once. */
export async function blockedAmong(rt: Runtime, phones: string[], options: DncOptions = {}, overlay?: DncOverlay): Promise<Set<string>> {
  const blocked = new Set<string>()
  if (phones.length === 0) return blocked
  const asked = new Set(phones)
  const unique = [...asked]
  for (let i = 0; i < unique.length; i += 500) {
    for (const row of await rt.store.db.selectFrom('dnc').select('phone').where('phone', 'in', unique.slice(i, i + 500)).execute()) blocked.add(row.phone)
  }
  withOverlay(blocked, overlay, asked)
  const file = fileOf(rt, options)
  if (file) {
    const listed = await readDncFile(file, countryOf(rt, options), dncWarning(rt))
    for (const phone of unique) if (listed.has(phone)) blocked.add(phone)
  }
  return blocked
}

/** The number as the list keys it (E.164), or the refusal `addToDnc` gives: a recipe's dry run refuses it the same. */
export function dncNumber(rt: Runtime, phone: string): string {
  const normalized = normalizePhone(phone, { defaultCountry: rt.config.defaultCountry })
  if (!normalized.ok) throw new Error(`cannot add "${phone}" to the do-not-call list: ${normalized.reason}`)
  return normalized.e164
}

/**
 * Adds a number; `added` is false when it was already listed (the first reason is kept). `scheduledWithProvider`: the
 * calls to it already handed to the provider for a time still ahead, which the list cannot stop (the API cannot cancel
 * them) — logged as a warning naming them, so a person can cancel them in the provider's dashboard.
 */
export async function addToDnc(
  rt: Runtime,
  phone: string,
  details: { reason?: string | null; source?: string | null } = {},
): Promise<{ added: boolean; phone: string; scheduledWithProvider: number }> {
  const e164 = dncNumber(rt, phone)
  const result = await rt.store.db
    .insertInto('dnc')
    .values({ phone: e164, reason: details.reason ?? null, source: details.source ?? null, added_at: rt.clock.now() })
    .onConflict((oc) => oc.column('phone').doNothing())
    .executeTakeFirst()
  const added = Number(result.numInsertedOrUpdatedRows ?? 0) > 0
  const ahead = added ? await scheduledWithProvider(rt, e164) : { count: 0, calls: [] }
  if (ahead.count > 0) {
    rt.log.warn(
      { scheduled: ahead.count, calls: ahead.calls.map((c) => ({ trace_id: c.trace_id, scheduled_for: new Date(c.scheduled_for).toISOString() })), source: details.source ?? null },
      "a number added to the do-not-call list has calls already scheduled with the provider, which its API cannot cancel: cancel them in the provider's dashboard (calls list --phone <number> --status scheduled)",
    )
  }
  return { added, phone: e164, scheduledWithProvider: ahead.count }
}

/** The number `removeFromDnc` removes: E.164 when it normalises, else as given (a row stored before normalisation). */
export function dncRemovalNumber(rt: Runtime, phone: string): string {
  const normalized = normalizePhone(phone, { defaultCountry: rt.config.defaultCountry })
  return normalized.ok ? normalized.e164 : phone
}

export async function removeFromDnc(rt: Runtime, phone: string): Promise<boolean> {
  const e164 = dncRemovalNumber(rt, phone)
  const result = await rt.store.db.deleteFrom('dnc').where('phone', '=', e164).executeTakeFirst()
  return Number(result.numDeletedRows) > 0
}

export interface DncEntry {
  phone: string
  reason: string | null
  source: string | null
  addedAt: number
}

/**
 * Entries of the table, newest first. `search`: a whole phone number (in any form the list's numbers are read in:
 * `+91 98765 43210`, `09876543210` with DEFAULT_COUNTRY) finds that number by the list's key; anything else matches
 * any part of the number (digits compared). "Is this number listed?" read every number on the list as a part-match —
 * ~90 ms at 1,000,000 numbers on a fast machine, more than the page's budget on a slow one — where the key answers at once.
 */
export async function listDnc(rt: Runtime, query: { search?: string; limit?: number } = {}): Promise<DncEntry[]> {
  let q = rt.store.db.selectFrom('dnc').selectAll()
  const { whole, digits, none } = searchOf(rt, query.search)
  if (none) return []
  if (whole) q = q.where('phone', '=', whole)
  else if (digits) q = q.where('phone', 'like', `%${digits}%`)
  const rows = await q.orderBy('added_at', 'desc').orderBy('phone').limit(limitOf(query.limit)).execute()
  return rows.map((r) => ({ phone: r.phone, reason: r.reason, source: r.source, addedAt: Number(r.added_at) }))
}

/**
 * A search as `listDnc` reads it: a whole number (its E.164), or the digits any part of a number must hold. A search
 * with no digit at all (`abc`, `--`) matches nothing (`none`): read as "no filter", it listed every number as a match.
 */
function searchOf(rt: Runtime, search: string | undefined): { whole?: string; digits: string; none: boolean } {
  const digits = (search ?? '').replace(/\D/g, '')
  const none = digits === '' && (search ?? '').trim() !== ''
  const whole = digits.length >= 7 ? normalizePhone(search, { defaultCountry: rt.config.defaultCountry }) : undefined
  return whole?.ok ? { whole: whole.e164, digits, none } : { digits, none }
}

const limitOf = (limit: number | undefined) => Math.min(Math.max(limit ?? 100, 1), 1000)

export interface DncFileSearch {
  /** The file `isBlocked` reads by default. */
  path: string
  /** How many numbers it lists. */
  size: number
  has(e164: string): boolean
  /** Its numbers a search finds, as `listDnc` searches the table (none without a search), in order, at most `limit`. */
  matches: string[]
}

/**
 * The file's part of the list for a search of it (the Mail page): `isBlocked`'s default file (`$DATA_DIR/dnc.csv` when it
 * exists), read in DEFAULT_COUNTRY as a call's number is; undefined without one. A whole number is one look-up; part of one
 * reads the file's numbers (parsed once per version of the file, as every call reads it).
 */
export async function searchDncFile(rt: Runtime, query: { search?: string; limit?: number } = {}): Promise<DncFileSearch | undefined> {
  const file = fileOf(rt, {})
  if (!file) return undefined
  const numbers = await readDncFile(file, countryOf(rt, {}), dncWarning(rt))
  const { whole, digits } = searchOf(rt, query.search)
  const limit = limitOf(query.limit)
  const matches: string[] = []
  if (whole) {
    if (numbers.has(whole)) matches.push(whole)
  } else if (digits) {
    for (const phone of numbers) {
      if (!phone.includes(digits)) continue
      matches.push(phone)
      if (matches.length >= limit) break
    }
  }
  return { path: file, size: numbers.size, has: (e164) => numbers.has(e164), matches: matches.sort() }
}

export interface DncImportResult {
  added: number
  /** Numbers already listed. */
  existing: number
  /** Rows that could not be read, with their row number (1 = the first line), raw value and reason. */
  errors: Array<{ row: number; raw: string; reason: string }>
}

/**
 * Adds the numbers of a CSV (first column the number, an optional second column the reason; a header row
 * is recognised and skipped). Every row that is not a number is reported, never silently dropped.
 */
export async function importDncCsv(rt: Runtime, text: string, source = 'csv import'): Promise<DncImportResult> {
  let records: string[][]
  try {
    const body = text.replace(/^\uFEFF/, '')
    // Comma, semicolon or tab: the one after the first column (a number, or a header's name) on the first line — the
    // file may have no header, and a reason's free text can hold more semicolons than the line has commas.
    const delimiter = firstDelimiter(body.slice(0, body.search(/[\r\n]|$/)))
    records = parse(body, { delimiter, relax_column_count: true, relax_quotes: true, skip_empty_lines: false, trim: true }) as string[][]
  } catch (error) {
    return { added: 0, existing: 0, errors: [{ row: 0, raw: '', reason: `not a CSV file: ${(error as Error).message}` }] }
  }
  const result: DncImportResult = { added: 0, existing: 0, errors: [] }
  for (const [index, record] of records.entries()) {
    const raw = record[0] ?? ''
    if (record.every((c) => c === '')) continue
    if (index === 0 && /^[a-z _-]+$/i.test(raw)) continue // a header such as "phone,reason"
    const normalized = normalizePhone(raw, { defaultCountry: rt.config.defaultCountry })
    if (!normalized.ok) {
      result.errors.push({ row: index + 1, raw, reason: normalized.reason })
      continue
    }
    const { added } = await addToDnc(rt, normalized.e164, { reason: record[1] || null, source })
    if (added) result.added++
    else result.existing++
  }
  return result
}

const TRUTHY = new Set(['true', 'yes', 'y', '1'])
const FLAG_KEYS = ['do_not_call', 'dnc', 'opt_out', 'optout', 'opted_out', 'unsubscribe', 'unsubscribed', 'remove_from_list', 'do_not_contact']
const INTENT_KEYS = ['intent', 'outcome', 'disposition', 'call_outcome', 'customer_intent', 'status']
/** Values that ask not to be called when they are the whole value ("stop", "DNC"). */
const DNC_INTENTS = new Set(['do_not_call', 'dnc', 'opt_out', 'optout', 'opted_out', 'unsubscribe', 'unsubscribed', 'stop', 'remove_me', 'stop_calling', 'dont_call', 'do_not_contact'])
/**
 * Phrases that ask it anywhere in a value ("Don't call me again", "customer opted out"): too specific to mean
 * anything else. A wrong match keeps one number off the list — the safe side of a do-not-call rule.
 */
const DNC_PHRASES = ['do_not_call', 'dont_call', 'stop_calling', 'opt_out', 'opted_out', 'unsubscribe', 'remove_me', 'remove_from_list', 'do_not_contact']

/**
 * A key or value as snake_case words: camelCase split (`doNotCall`), apostrophes dropped (`Don't` → `dont`, also ’),
 * anything else between letters and digits an underscore.
 */
function word(value: unknown): string {
  return String(value)
    .trim()
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .toLowerCase()
    .replace(/['\u2019]/g, '')
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '')
}

function asksInValue(value: unknown): boolean {
  const w = word(value)
  if (DNC_INTENTS.has(w)) return true
  const padded = `_${w}_`
  return DNC_PHRASES.some((phrase) => padded.includes(`_${phrase}_`))
}

/**
 * Whether a call's results ask not to be called again: a flag such as `{do_not_call: true}` (also `doNotCall`,
 * `dnc`, `opt_out`, `opted_out`, `unsubscribe`; true, "yes", 1) or an intent-like field (`intent`, `outcome`,
 * `disposition`, …) whose value is `do_not_call`, `opt_out`, `unsubscribe`, `stop`, … or says so in words
 * ("Don't call me again", "customer opted out").
 */
export function asksNotToCall(results: Record<string, unknown> | null | undefined): boolean {
  if (!results) return false
  for (const [key, value] of Object.entries(results)) {
    const k = word(key)
    if (FLAG_KEYS.includes(k) && (value === true || value === 1 || (typeof value === 'string' && TRUTHY.has(word(value))))) return true
    if (INTENT_KEYS.includes(k) && (typeof value === 'string' || Array.isArray(value))) {
      const values = Array.isArray(value) ? value : [value]
      if (values.some(asksInValue)) return true
    }
  }
  return false
}

/**
 * For the event pipeline: a terminal call event whose results ask not to be called adds the number at
 * once (the follow-up sweep also catches these, from the conversations read model). Idempotent.
 */
export async function optOutFromEvent(rt: Runtime, event: WebhookEvent): Promise<boolean> {
  if (!asksNotToCall(event.data.results ?? null)) return false
  const phone = event.data.call.to_phone
  const source = `conversation:${event.data.call.conversation_id}`
  if (normalizePhone(phone, { defaultCountry: rt.config.defaultCountry }).ok) {
    const { added } = await addToDnc(rt, phone, { reason: OPT_OUT_REASON, source })
    return added
  }
  // A number that does not normalise (`+447911000009 ext 5`, `=+447911000010`) was an opt-out dropped without a trace.
  // The number within it is listed when there is one (a call to it is refused, the safe side of the rule); either
  // way the operator hears of it, in the log and in switchboard_dnc_unreadable_opt_outs_total.
  const fields = { event_id: event.event_id, conversation_id: event.data.call.conversation_id, to_phone: printable(phone, 60) }
  const within = numberWithin(phone, rt.config.defaultCountry)
  const metrics = optOutMetrics(rt.metrics)
  if (within === undefined) {
    metrics.unreadable.inc({ outcome: 'not_listed' })
    rt.log.warn(fields, 'a call\'s results asked not to be called, but its number (to_phone) is not a phone number: nothing was added to the do-not-call list; add the number by hand')
    return false
  }
  const { added } = await addToDnc(rt, within, { reason: `results asked not to be called (number given as ${JSON.stringify(printable(phone, 60))})`, source })
  metrics.unreadable.inc({ outcome: 'listed' })
  rt.log.warn({ ...fields, phone: within }, 'a call\'s results asked not to be called, and its number (to_phone) is not a plain phone number: the number read within it was added to the do-not-call list')
  return added
}

/**
 * The phone number a text holds, read as the library reads free text (an extension, `ext 5`, left off; a leading
 * `=` or quote skipped), or undefined when there is none valid.
 */
function numberWithin(text: string, defaultCountry: string): string | undefined {
  // A dial string's trailing `#` or `*` (which the library's reading of free text gives up on) is not part of the number.
  for (const candidate of new Set([text, text.replace(/[^\d)]+$/, '')])) {
    let found: string
    try {
      // DEFAULT_COUNTRY is checked against libphonenumber's countries at start-up.
      found = parsePhone(candidate, { ...phoneParseOptions(defaultCountry.toUpperCase() as CountryCode), extract: true }).number
    } catch {
      continue
    }
    const normalized = normalizePhone(found, { defaultCountry })
    if (normalized.ok) return normalized.e164
  }
  return undefined
}

interface OptOutMetrics {
  unreadable: Counter<'outcome'>
}

/**
 * Opt-outs whose number did not normalise: `listed` (the number within it was added), `not_listed` (none could be
 * read: someone must add it by hand). Both series are listed at 0 from the start of processing (`optOutConsumer`).
 */
export const optOutMetrics = defineMetrics(
  (registers): OptOutMetrics => {
    const unreadable = new Counter({
      name: 'switchboard_dnc_unreadable_opt_outs_total',
      help: 'Opt-outs (results asking not to be called) whose number did not normalise, by outcome: listed (the number read within it) or not_listed',
      labelNames: ['outcome'],
      registers,
    })
    for (const outcome of ['listed', 'not_listed']) unreadable.inc({ outcome }, 0)
    return { unreadable }
  },
)

/** A do-not-call CSV from the dashboard (up to 5 MB, every number parsed and normalised: seconds for the largest), off the receiver's loop. */
export const dncImportTask = defineProcessingTask('dncImport', (rt, args: { text: string; source: string }) => importDncCsv(rt, args.text, args.source))
