import type { Runtime } from '../runtime.ts'
import type { BatchCall } from '../upstream/schemas.ts'
import type { Effects } from '../effects.ts'
import { printable } from '../utils/printable.ts'
import { batchColumns, batchCsv, type BatchRow } from './batch-csv.ts'
import { DEFAULT_WINDOW, isWithinWindow, nextCallingTime, resolveTimeZone, windowMinutes, type CallingWindow } from './calling-window.ts'
import { oversizedCell } from './cell-limit.ts'
import { createDeduper } from './dedupe.ts'
import { loadDncList, type DncOptions } from './dnc.ts'
import { dncOverlayOf } from './dry-run-dnc.ts'
import { setOwn } from './own-field.ts'
import { createPhoneNormalizer } from './phones.ts'
import { REJECT_REASONS } from './prepare-batch.ts'
import { PHONE_COLUMN } from './read-contacts.ts'
import { timeZoneColumnOf } from './timezone-column.ts'
import type { Reject } from './rejects.ts'
import { MAX_CSV_BYTES, MAX_CSV_ROWS } from '../sandbox/csv.ts'
import { isVoiceApiError, VoiceApiError } from '../upstream/errors.ts'

/** How a batch's refusal names the call, as a recipe writes it. */
const FN = 'ctx.campaigns.launchBatch(input)'

/**
 * The sandbox's limits on one batch upload (src/sandbox/csv.ts; the spec shows none): checked before a dry run plans
 * the batch as well as before the upload, so a dry run refuses what the real run would be refused. A real provider's
 * limits are its own: there its answer is the check.
 */
function sandboxRefusal(rows: number, csvBytes: number): string | undefined {
  if (rows > MAX_CSV_ROWS) return `${FN}: batch has ${rows} rows to upload; the sandbox takes at most ${MAX_CSV_ROWS} per batch: launch the rows in several batches`
  if (csvBytes > MAX_CSV_BYTES) return `${FN}: batch is ${csvBytes} bytes as CSV; the sandbox takes at most ${MAX_CSV_BYTES / 1024 / 1024} MB per batch: launch the rows in several batches`
  return undefined
}

/** The call parameter that names a call's campaign (src/reports/campaign.ts reads it). */
const CAMPAIGN_COLUMN = 'campaign'

/** `Campaign`, ` CAMPAIGN `: the campaign column as a spreadsheet may spell it. */
function isCampaignColumn(name: string): boolean {
  return name.trim().toLowerCase() === CAMPAIGN_COLUMN
}

/**
 * The row with its campaign under `campaign`: its own (a `Campaign` column of the file, whatever its case, renamed
 * so the report reads it), else the batch's. A `Campaign` column was kept beside an added `campaign`, and the calls
 * counted under the batch's name.
 */
function withCampaign(row: BatchRow, fallback: string): BatchRow {
  if (row[CAMPAIGN_COLUMN]) return row
  let own: string | undefined
  const rest: BatchRow = {}
  for (const [key, value] of Object.entries(row)) {
    if (key !== CAMPAIGN_COLUMN && isCampaignColumn(key)) own ||= value
    else setOwn(rest, key, value)
  }
  return { ...rest, [CAMPAIGN_COLUMN]: own || fallback }
}

/**
 * The longest batch name sent. The spec sets no limit; the provider's dashboard lists batches by name, and a name
 * made from a file name may run to 250 bytes.
 */
export const MAX_BATCH_NAME_CHARS = 200

/**
 * The name as sent: control characters (a line break, an escape sequence from a file's name) are one space each run,
 * and the name is cut to MAX_BATCH_NAME_CHARS characters (never inside one).
 */
export function cleanBatchName(name: string): string {
  const clean = name.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]+/g, ' ').trim() || 'batch'
  const chars = Array.from(clean)
  return chars.length > MAX_BATCH_NAME_CHARS ? chars.slice(0, MAX_BATCH_NAME_CHARS).join('').trimEnd() : clean
}

/** A time-zone value as a warning quotes it: in double quotes, escaped, cut. */
function quotedZone(value: string): string {
  return printable(JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value), 60)
}

/** How many distinct unknown time-zone values a warning quotes. */
const ZONES_SHOWN = 3

export interface LaunchBatchInput {
  agentId: number
  /**
   * The batch's name (shown in the provider's dashboard; the calls' campaign unless `campaign` says otherwise). Sent
   * with control characters as spaces and cut to MAX_BATCH_NAME_CHARS (`cleanBatchName`).
   */
  name: string
  /** Rows with `customer_phone` and the other columns; usually `prepareBatch(...).rows`. */
  rows: BatchRow[]
  /** Rejects already found (e.g. by `prepareBatch`), carried into the plan. */
  rejects?: Reject[]
  /** Column order; default: customer_phone then the rows' keys in first-seen order. */
  columns?: string[]
  dnc?: DncOptions
  /**
   * The campaign the daily report, the dashboard and the follow-up cap count these calls under. The provider's
   * conversations do not say which batch they came from, so it travels as a `campaign` column (a call parameter
   * on each call) on every row that has none. Default: the batch's name; `false` adds no column.
   */
  campaign?: string | false
  /**
   * The hours each row's recipient must be inside for the row to go out now. The batch API has no schedule
   * field: the provider starts calling as soon as the CSV is uploaded. So rows whose recipient's window is
   * closed are not uploaded: they come back in `deferred`, each with the time its window opens, for a later
   * run to launch. Default 09:00–21:00 in the recipient's local time; `false` uploads every row whatever the hour.
   */
  window?: CallingWindow | false
  /**
   * Minutes a row's window must still stay open for the row to go out now. The provider works through a batch
   * over time (at its concurrent-call limit), so rows uploaded just before the close would ring after it: a row
   * whose window closes sooner is deferred to the next opening. Default 60; at most half the window; 0 for none.
   */
  closingMarginMinutes?: number
  /**
   * The country a number written without its country code is read in; default DEFAULT_COUNTRY (pass what
   * `prepareBatch` read the file with). The do-not-call file's national-form lines are read in it too, unless
   * `dnc.defaultCountry` names another.
   */
  defaultCountry?: string
  /** The time zone for numbers whose country has several and whose row has no valid `timezone` column (the recipe's). Default RECIPES_TIMEZONE. */
  timeZone?: string
}

/** How long before its window closes a row stops going out in a batch (see `closingMarginMinutes`). */
export const DEFAULT_CLOSING_MARGIN_MINUTES = 60

/** The margin in ms: at most half the window (a short window must still take rows), never negative. */
function closingMarginMs(window: CallingWindow, minutes: number): number {
  if (!Number.isFinite(minutes) || minutes < 0) throw new Error(`closingMarginMinutes must be 0 or more minutes (got ${minutes})`)
  const length = windowMinutes(window)
  return Math.min(minutes, Math.floor(length / 2)) * 60_000
}

/** A row held back because its recipient's calling window is closed now (or closes within the margin). */
export interface DeferredRow {
  row: BatchRow
  /** When the recipient's window next opens (ISO 8601). */
  opensAt: string
}

export interface LaunchBatchResult {
  /** The provider's batch record; null in a dry run or when no row was left to call. */
  batch: BatchCall | null
  rows: BatchRow[]
  rejects: Reject[]
  /** Rows not uploaded because their recipient's calling window is closed now (see `window`). */
  deferred: DeferredRow[]
  /** Why nothing was sent, when nothing was. */
  skipped?: 'dry_run' | 'no_rows' | 'outside_window'
  /**
   * What did not stop the launch but the team should see (a recipe puts them in its run's summary): rows of a
   * country split across time zones, with no `timezone` column, called in the fallback zone. Also logged.
   */
  warnings: string[]
}

/**
 * Uploads one batch (POST /v1/batch-call) with the workspace key. The do-not-call list is checked again
 * right before the upload, and rows handed in from code are normalized and deduped here too, so a recipe
 * cannot launch a number it should not call — nor call one outside its calling window: the provider starts
 * a batch at once, so rows whose recipient's window is closed are returned in `deferred` instead of uploaded.
 * In a dry run the batch goes into the plan instead.
 */
export async function launchBatch(rt: Runtime, given: LaunchBatchInput, effects: Effects): Promise<LaunchBatchResult> {
  const input = { ...given, name: cleanBatchName(given.name) }
  const defaultCountry = input.defaultCountry ?? rt.config.defaultCountry
  const normalize = createPhoneNormalizer({ defaultCountry })
  const dnc = await loadDncList(rt, { ...input.dnc, defaultCountry: input.dnc?.defaultCountry ?? defaultCountry }, dncOverlayOf(effects))
  const dedupe = createDeduper()
  const rows: BatchRow[] = []
  const rejects: Reject[] = [...(input.rejects ?? [])]
  const deferred: DeferredRow[] = []
  const now = rt.clock.now()
  const window = input.window === undefined ? DEFAULT_WINDOW : input.window
  const marginMs = window ? closingMarginMs(window, input.closingMarginMinutes ?? DEFAULT_CLOSING_MARGIN_MINUTES) : 0
  const fallbackZone = input.timeZone ?? rt.config.recipes.timezone
  /** Rows of countries split across zones, with no time-zone column: called in the fallback zone, by country. */
  const guessed = new Map<string, number>()
  /** Such rows whose time-zone value is not a zone (`Mars/Phobos`), by country, and the values. */
  const unknown = new Map<string, number>()
  const unknownValues = new Set<string>()
  input.rows.forEach((original, index) => {
    // Rows given in code have no file line: their position (1-based) is their row number.
    const rowNumber = index + 1
    const raw = original[PHONE_COLUMN] ?? ''
    // A row keyed `phone` (as a CSV's header may be) was "phone number is empty", which hid the cause.
    if (!Object.hasOwn(original, PHONE_COLUMN)) {
      const columns = Object.keys(original).slice(0, 5).map((c) => JSON.stringify(printable(c, 40))).join(', ')
      return void rejects.push({ row: rowNumber, raw, reason: `the row has no "${PHONE_COLUMN}" (its columns: ${columns || 'none'}): rows given to launchBatch are keyed by ${PHONE_COLUMN}` })
    }
    const phone = normalize(raw)
    if (!phone.ok) return void rejects.push({ row: rowNumber, raw, reason: phone.reason })
    // Rows given in code are held to what prepareBatch holds a file's rows to.
    const oversized = oversizedCell(original)
    if (oversized) return void rejects.push({ row: rowNumber, raw, reason: oversized })
    const first = dedupe.firstSeen(phone.e164, rowNumber)
    if (first !== undefined) return void rejects.push({ row: rowNumber, raw, reason: REJECT_REASONS.duplicate(first) })
    if (dnc.has(phone.e164)) return void rejects.push({ row: rowNumber, raw, reason: REJECT_REASONS.dnc })
    const row = phone.e164 === raw ? original : { ...original, [PHONE_COLUMN]: phone.e164 }
    if (window) {
      const column = timeZoneColumnOf(original)
      const resolved = resolveTimeZone(phone.e164, { country: phone.country, column, fallback: fallbackZone })
      const zone = resolved.zone
      if (resolved.from === 'fallback') {
        // A value that is not a zone is not a missing column: said as such, with the values, so the list can be fixed.
        const value = column?.trim()
        const counts = value ? unknown : guessed
        counts.set(resolved.country ?? '?', (counts.get(resolved.country ?? '?') ?? 0) + 1)
        if (value) unknownValues.add(value)
      }
      if (!isWithinWindow(now, zone, window)) return void deferred.push({ row, opensAt: new Date(nextCallingTime(now, zone, window)).toISOString() })
      // Open now, but closing before the batch could reach the row: the next opening (the one after the close).
      if (marginMs > 0 && !isWithinWindow(now + marginMs, zone, window)) {
        return void deferred.push({ row, opensAt: new Date(nextCallingTime(now + marginMs, zone, window)).toISOString() })
      }
    }
    rows.push(row)
  })

  const warnings: string[] = []
  if (guessed.size > 0) {
    const counts = [...guessed].map(([country, n]) => `${country}: ${n}`).join(', ')
    const warning = `batch rows of countries with several time zones have no timezone column (${counts}): their calling window is taken in ${fallbackZone}; add a timezone column to call each in their own`
    warnings.push(warning)
    rt.log.warn({ batch: input.name, rows: [...guessed.values()].reduce((a, b) => a + b, 0), countries: counts, time_zone: fallbackZone }, warning)
  }
  if (unknown.size > 0) {
    const counts = [...unknown].map(([country, n]) => `${country}: ${n}`).join(', ')
    const values = [...unknownValues]
    const shown = values.slice(0, ZONES_SHOWN).map(quotedZone).join(', ') + (values.length > ZONES_SHOWN ? ` and ${values.length - ZONES_SHOWN} more` : '')
    const warning = `batch rows of countries with several time zones have a timezone value that is not a time zone (${counts}; ${shown}): their calling window is taken in ${fallbackZone}; write an IANA zone such as "America/Chicago" (or EST, CT, PT…) to call each in their own`
    warnings.push(warning)
    rt.log.warn({ batch: input.name, rows: [...unknown.values()].reduce((a, b) => a + b, 0), countries: counts, time_zone: fallbackZone }, warning)
  }
  const campaign = input.campaign === undefined ? input.name : input.campaign
  if (campaign !== false) {
    for (let i = 0; i < rows.length; i++) rows[i] = withCampaign(rows[i]!, campaign)
    // Deferred rows keep their campaign too: launched later (under another batch name), they still count under it.
    for (const d of deferred) d.row = withCampaign(d.row, campaign)
  }
  if (deferred.length > 0) {
    rt.log.info({ batch: input.name, deferred: deferred.length, first_opens_at: deferred.reduce((a, d) => (d.opensAt < a ? d.opensAt : a), deferred[0]!.opensAt) }, 'batch rows held back: their recipients\' calling window is closed')
  }
  const effect = { kind: 'batch' as const, agent_id: input.agentId, name: input.name, rows, rejects }
  // Nothing to upload: a dry run says what the real run would (no batch in its plan), not "0 rows uploaded".
  if (rows.length === 0) {
    if (deferred.length > 0) return { batch: null, rows, rejects, deferred, skipped: 'outside_window', warnings }
    if (!effects.dryRun) rt.log.info({ batch: input.name, rejects: rejects.length }, 'batch has no callable rows; nothing uploaded')
    return { batch: null, rows, rejects, deferred, skipped: 'no_rows', warnings }
  }
  const ownColumns = campaign === false ? input.columns : input.columns?.filter((c) => c === CAMPAIGN_COLUMN || !isCampaignColumn(c))
  const columns = ownColumns && campaign !== false && !ownColumns.includes(CAMPAIGN_COLUMN) ? [...ownColumns, CAMPAIGN_COLUMN] : ownColumns
  // Built before a dry run plans the batch only where its size is checked (the sandbox's limits).
  const csvOf = () => batchCsv(rows, columns ?? batchColumns(rows))
  if (rt.config.sandboxMode) {
    const refusal = sandboxRefusal(rows.length, rows.length > MAX_CSV_ROWS ? 0 : Buffer.byteLength(csvOf()))
    // The sandbox's own answer (400 invalid_request), so a recipe that parks a refused file handles it as it would.
    if (refusal) throw new VoiceApiError({ type: 'invalid_request', status: 400, message: refusal })
  }
  if (effects.dryRun) {
    effects.plan.push(effect)
    return { batch: null, rows, rejects, deferred, skipped: 'dry_run', warnings }
  }
  const filename = `${input.name.replace(/[^\w.-]+/g, '_').slice(0, 80) || 'batch'}.csv`
  let batch: BatchCall
  try {
    batch = await rt.workspaceClient().createBatch({
      agent_id: input.agentId,
      name: input.name,
      file: { data: csvOf(), filename, contentType: 'text/csv' },
    })
  } catch (error) {
    // The provider's 404 to a batch is its agent ("agent not found"): said with the id the recipe passed. Still the
    // provider's error (type, status, body), so a recipe that tells a refusal from an outage goes on doing so.
    if (isVoiceApiError(error) && error.status === 404) {
      throw new VoiceApiError({ type: error.type, status: error.status, body: error.body, rateLimit: error.rateLimit, cause: error, message: `${FN}: input.agentId: the provider has no agent ${input.agentId} (${error.message})` })
    }
    throw error
  }
  effects.plan.push(effect)
  rt.log.info({ batch_id: batch.id, name: input.name, rows: rows.length, rejects: rejects.length }, 'batch launched')
  return { batch, rows, rejects, deferred, warnings }
}
