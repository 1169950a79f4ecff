import { createHash } from 'node:crypto'
import { existsSync, lstatSync } from 'node:fs'
import { mkdir, readdir, rename, stat, writeFile } from 'node:fs/promises'
import { basename, extname, join } from 'node:path'
import { defineRecipe, isVoiceApiError } from 'switchboard'

// ── Settings: edit these ────────────────────────────────────────────────────────────────────────
/** The agent that calls every batch (sandbox: 101 is Acme's outbound agent). */
const AGENT_ID = 101
/**
 * When to pick up the files: every hour, in RECIPES_TIMEZONE (or TIMEZONE below). The provider starts calling a
 * batch the moment it is uploaded, so each contact goes out only inside CALLING_WINDOW in their own time: the others
 * wait in inbox/waiting/ and go out with the first run after their window opens (an hourly run catches every zone's
 * opening within the hour; a once-a-night schedule would hold most contacts a day).
 */
const SCHEDULE = '0 * * * *'
/** The hours a contact may be called, in their local time (their number's country, else a `timezone` column, else TIMEZONE). */
const CALLING_WINDOW = { start: '09:00', end: '21:00' }
/** Leave undefined to use RECIPES_TIMEZONE. */
const TIMEZONE: string | undefined = undefined
/** Drop contact CSVs here (relative to DATA_DIR). Write them elsewhere and move them in, so a half-copied file is never read. */
const INBOX = 'inbox'
/** Contacts whose calling window was closed, under INBOX: one CSV per held-back part of a file, named `<list>.<id>.csv`. */
const WAITING = 'waiting'
/** Extra header names to read as the phone column, beyond customer_phone/phone/mobile/contact_number/msisdn/… */
const PHONE_ALIASES: string[] = []

interface FileOutcome {
  file: string
  batch_id: number | null
  batch: string
  rows: number
  rejects: number
  /** Contacts held back until their calling window opens, in `waiting_file`, and the earliest opening. */
  waiting: number
  waiting_file: string | null
  opens_at: string | null
  moved_to: string | null
  /** The file was read, but not as written (a Latin-1 CSV transcoded): check the names in the batch. */
  warnings?: string[]
  error?: string
}

/** Files still being written by a copy or a download: left alone until they are renamed (WinSCP: `.filepart`). */
const IN_PROGRESS = /\.(part|partial|filepart|tmp|temp|crdownload|download|swp)$|~$/i
/**
 * A file modified less than this long ago is left for a later run: scp, SFTP and SMB copies write the final name
 * directly, and a file read while its copy runs would be launched half-read and its rest moved to done/ uncalled.
 */
const SETTLE_MS = 60_000

/** The longest file name the usual file systems take: 255 bytes (ext4, XFS, APFS), 255 UTF-16 units (NTFS). */
const NAME_MAX_BYTES = 255

/** `text` cut to at most `bytes` bytes of UTF-8, never inside a character. */
function cutToBytes(text: string, bytes: number): string {
  if (Buffer.byteLength(text) <= bytes) return text
  let cut = ''
  let used = 0
  for (const ch of text) {
    used += Buffer.byteLength(ch)
    if (used > bytes) break
    cut += ch
  }
  return cut
}

/** Whether anything holds this name: a file, a folder, a link (a dangling one too: `existsSync` follows links). */
function taken(path: string): boolean {
  try {
    lstatSync(path)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'ENOENT'
  }
}

/**
 * Paths in `dir` for `file` and the files kept beside it, free all at once: `endings(ext)` gives each one's ending after
 * the shared base (done/: `.csv` and `.rejects.csv`; failed/: `.xlsx` and `.xlsx.error.txt`). A base where any of them is
 * taken gets `-2`, `-3`, … — checking the moved file's name alone let `z.csv`'s rejects overwrite an archived
 * `z.rejects.csv`. Each name fits NAME_MAX_BYTES: a long stem is cut (by UTF-8 bytes, the extension kept), or the
 * rejects file of a 250-byte name could never be written and the file failed every run.
 */
function freeNames(dir: string, file: string, endings: (ext: string) => string[]): string[] {
  const longest = (ext: string) => Math.max(...endings(ext).map((e) => Buffer.byteLength(e)))
  let ext = extname(file)
  let stem = basename(file, ext)
  // An "extension" that is most of the name (`a.<250 bytes>`) is cut as part of the stem.
  if (NAME_MAX_BYTES - longest(ext) < 16) {
    stem = file
    ext = ''
  }
  for (let i = 1; ; i++) {
    const suffix = i === 1 ? '' : `-${i}`
    const base = cutToBytes(stem, NAME_MAX_BYTES - longest(ext) - suffix.length) + suffix
    const paths = endings(ext).map((end) => join(dir, base + end))
    if (!paths.some(taken)) return paths
  }
}

/** A name as one printable line (a file name may hold a line break or an escape sequence): controls as `\xNN`. */
function shown(name: string): string {
  return name.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, (c) => (c <= '\u00ff' ? `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}` : `\\u${c.charCodeAt(0).toString(16)}`))
}

/**
 * The provider's dashboard shows a batch by name, and a file name may hold anything Linux allows: control characters
 * (a line break, an escape sequence) become a space; a long name is cut so the name with its night stays within
 * BATCH_NAME_MAX (the spec sets no limit; launchBatch cuts there too).
 */
const BATCH_NAME_MAX = 200
function listTitle(list: string): string {
  const clean = list.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]+/g, ' ').trim() || 'batch'
  return Array.from(clean).slice(0, BATCH_NAME_MAX - '-YYYY-MM-DD'.length).join('')
}

/** `leads.csv` → `leads`; a waiting part `leads.0123abcd.csv` → `leads` (its list, which names batch and campaign). */
function listOf(file: string, waiting: boolean): string {
  const stem = basename(file, extname(file))
  return waiting ? stem.replace(/\.[0-9a-f]{8}$/, '') : stem
}

/** What a launch did, recorded until its file has moved to done/ (its held-back rows until they are in waiting/). */
interface Launched {
  batch_id: number | null
  rows: number
  waiting: number
  waiting_file: string | null
  opens_at: string | null
  held_back: Array<Record<string, string>>
  /** What the launch warned of (rows of a country split across time zones called in the fallback zone). */
  warnings?: string[]
}

/** A run found the mark an earlier run set before uploading this file, and no record of the upload's end. */
class InterruptedUpload extends Error {
  constructor(batch: string, since: string) {
    super(`a run stopped while uploading batch "${batch}" (at ${since}): the provider may have created it and be calling this list. Look for the batch in the provider's dashboard (or GET /v1/batch-calls) before dropping this file in again`)
  }
}

/**
 * Why an upload that failed left its file in the inbox for the next run, when it provably never reached the provider
 * (the connection refused, the provider's host name not found, the connect timed out): nothing can have been created.
 */
function unsentReason(error: unknown, batch: string): string | undefined {
  if (!isVoiceApiError(error) || !error.neverSent) return undefined
  return `the provider was unreachable (${error.networkCode ?? error.type}: ${error.message}), so batch "${batch}" was not uploaded: the file stays in the inbox and is uploaded with the next run`
}

/**
 * Why a file that failed is parked in `failed/` (with this as its `.error.txt`) rather than tried again next run; undefined
 * to try again. Retrying is right only when the failure said nothing was created and may pass: a rate limit, a key
 * being fixed, a provider that could not be reached at all (the upload never left). A file that cannot be read as
 * contacts, or a batch the provider refused (400: over 10,000 rows, say), fails the same way every night. And an upload
 * whose answer was lost (a timeout, a connection reset, a 5xx) may have created the batch — batch uploads have no
 * idempotency key — so uploading it again could call every contact twice: a person checks.
 */
function parkReason(error: unknown, batch: string): string | undefined {
  if ((error as Error).name === 'ContactsError') return (error as Error).message
  if (error instanceof InterruptedUpload) return error.message
  if (!isVoiceApiError(error) || error.status === 429 || error.status === 401 || error.neverSent) return undefined
  if (error.status === 0 || error.status >= 500 || error.type === 'invalid_response') {
    return `the upload of batch "${batch}" got no clear answer (${error.type}: ${error.message}): the provider may have created it and be calling this list. Look for the batch in the provider's dashboard (or GET /v1/batch-calls) before dropping this file in again`
  }
  return `the provider refused batch "${batch}" (${error.status} ${error.type}: ${error.message}); fix the file and drop it in again`
}

export default defineRecipe({
  description: `Every CSV in DATA_DIR/${INBOX}/ becomes one cleaned batch for agent ${AGENT_ID}, each contact inside ${CALLING_WINDOW.start}–${CALLING_WINDOW.end} their time (the rest wait in ${INBOX}/${WAITING}/); the file then moves to ${INBOX}/done/ beside its rejects CSV (unreadable files to ${INBOX}/failed/)`,
  schedule: SCHEDULE,
  timezone: TIMEZONE,
  async run(ctx) {
    const inbox = join(ctx.config.dataDir, INBOX)
    const waitingDir = join(inbox, WAITING)
    const done = join(inbox, 'done')
    const failed = join(inbox, 'failed')
    const listing = existsSync(inbox) ? (await readdir(inbox, { withFileTypes: true })).filter((e) => !e.name.startsWith('.') && !IN_PROGRESS.test(e.name)) : []
    const named = listing.filter((e) => e.isFile()).map((e) => e.name).sort()
    // Named like a list but not a file: never read (a link's target may be any file on the machine), but said so — they
    // were passed over without a word. Other folders are done/, failed/, waiting/ and template recipes' inboxes.
    const notFiles = listing.filter((e) => !e.isFile() && e.name.toLowerCase().endsWith('.csv')).sort((a, b) => (a.name < b.name ? -1 : 1))
    const entries: string[] = []
    /** Files left for the next run, in case they are still being copied (named in the result, so a dry run says so). */
    const settling: string[] = []
    /** Each file's size and modification time as listed: one that changes before it is read and launched is left too. */
    const listed = new Map<string, string>()
    const version = (info: { size: number; mtimeMs: number }) => `${info.size}:${Math.trunc(info.mtimeMs)}`
    for (const file of named) {
      const info = await stat(join(inbox, file))
      // Within a minute either side of now (a share's clock may run a little ahead): still being written, perhaps.
      const age = ctx.now.getTime() - info.mtimeMs
      if (Math.abs(age) < SETTLE_MS) {
        settling.push(file)
        ctx.log.info({ file }, 'inbox file modified in the last minute: left for the next run, in case it is still being copied')
      } else {
        entries.push(file)
        listed.set(file, version(info))
      }
    }
    /** A file written to after this run listed it (the files before it can take minutes): left for the next run, whole. */
    const stillWritten = (file: string) => {
      settling.push(file)
      ctx.log.info({ file }, 'inbox file modified while this run was under way: left for the next run, in case it is still being copied')
    }
    const files = entries.filter((f) => f.toLowerCase().endsWith('.csv'))
    const waitingFiles = existsSync(waitingDir)
      ? (await readdir(waitingDir, { withFileTypes: true })).filter((e) => e.isFile() && e.name.toLowerCase().endsWith('.csv')).map((e) => e.name).sort()
      : []
    const outcomes: FileOutcome[] = []
    /** Parks a file that can never become a batch in failed/, with its reason beside it, so it fails one night only. */
    const park = async (file: string, reason: string): Promise<string | null> => {
      if (ctx.dryRun) return null
      await mkdir(failed, { recursive: true })
      const [movedTo, errorFile] = freeNames(failed, basename(file), (ext) => [ext, `${ext}.error.txt`])
      await rename(join(inbox, file), movedTo!)
      await writeFile(errorFile!, reason + '\n')
      return movedTo!
    }
    for (const file of entries.filter((f) => !files.includes(f))) {
      const reason = `${shown(file)} is not a CSV file (the inbox reads *.csv only); export it as "CSV UTF-8" and drop the .csv in`
      ctx.log.warn({ file }, reason)
      outcomes.push({ file, batch_id: null, batch: '', rows: 0, rejects: 0, waiting: 0, waiting_file: null, opens_at: null, moved_to: await park(file, reason), error: reason })
    }
    /** Folders named `*.csv`, left where they are (they may be someone's), named in every run's summary. */
    const skipped: Array<{ entry: string; reason: string }> = []
    for (const entry of notFiles) {
      const file = entry.name
      if (entry.isDirectory()) {
        const reason = `${shown(file)} is a folder, not a file: left as it is (the inbox reads the *.csv files directly in it, not in folders)`
        ctx.log.warn({ file }, reason)
        skipped.push({ entry: file, reason })
        continue
      }
      // A link is parked as it is (rename moves the link, not its target), so it is named once, not every hour.
      const reason = entry.isSymbolicLink()
        ? `${shown(file)} is a symbolic link: the inbox reads files only, never a link's target; move or copy the file itself in`
        : `${shown(file)} is not a regular file (a pipe, a socket, a device): the inbox reads files only`
      ctx.log.warn({ file }, reason)
      outcomes.push({ file, batch_id: null, batch: '', rows: 0, rejects: 0, waiting: 0, waiting_file: null, opens_at: null, moved_to: await park(file, reason), error: reason })
    }
    const day = new Intl.DateTimeFormat('en-CA', { timeZone: ctx.timezone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(ctx.now)
    const unparked: FileOutcome[] = []
    // New files first, then contacts held back by earlier runs (`waiting/…`, named so in the summary).
    const sources = [...files.map((file) => ({ file, path: join(inbox, file), waiting: false })), ...waitingFiles.map((file) => ({ file: `${WAITING}/${file}`, path: join(waitingDir, file), waiting: true }))]
    /**
     * The numbers this run calls, or holds back to call, by the file that has them (a held-back contact: by its waiting
     * file): a contact in two files (a list sent again, a held-back part and a new export of the same people) is called
     * once — in the first file's batch, the other file's row rejected saying so. Two batches called them twice within a
     * second. A file this run could not upload keeps its contacts too: it goes with a later run (or a person checks
     * it in failed/), and another file's batch called them meanwhile, then that file's again.
     */
    const calledBy = new Map<string, { file: string; uploaded: boolean }>()
    /** The exclusion for one file: a number some other file of this run has, not one its own launch (or waiting file) has. */
    const excludeFor = (own: ReadonlyArray<string | null>) => (phone: string) => {
      const other = calledBy.get(phone)
      if (other === undefined || own.includes(other.file)) return undefined
      return `also in ${shown(other.file)}, which ${other.uploaded ? 'this run calls' : 'this run could not upload (it goes with a later run, or is checked in failed/)'}`
    }
    for (const { file, path, waiting } of sources) {
      const list = listTitle(listOf(file, waiting))
      // The batch is named by list and night (as the provider's dashboard shows it); its campaign is the list's
      // name, so a list sent again on another night stays one campaign (the report's rows, the follow-up cap).
      const name = `${list}-${day}`
      // A launch that succeeded before a crash (file not yet moved) must not be launched again.
      const info = await stat(path)
      if (!waiting && listed.get(file) !== version(info)) {
        stillWritten(file)
        continue
      }
      const launchedKey = `launched:${file}:${version(info)}`
      // Set before the upload and replaced by the launch's record right after it: a run that finds it still set was
      // stopped mid-upload (a crash, a kill), and the provider may have created the batch — a person checks.
      let uploading = false
      let prepared: Awaited<ReturnType<typeof ctx.campaigns.prepareBatch>> | undefined
      try {
        // What the launch did: this run's, or the one recorded before a crash that left the file in place.
        const recorded = ctx.dryRun ? undefined : await ctx.state.get<Launched | { uploading: string }>(launchedKey)
        const earlier = recorded && !('uploading' in recorded) ? recorded : undefined
        // Its contacts held back by that launch are its waiting file's: that file, listed by this run, calls them.
        prepared = await ctx.campaigns.prepareBatch(path, { phoneAliases: PHONE_ALIASES, name: file, exclude: excludeFor([file, earlier?.waiting_file ?? null]) })
        if (recorded && 'uploading' in recorded) throw new InterruptedUpload(name, recorded.uploading)
        if (!waiting && !earlier && version(await stat(path)) !== version(info)) {
          stillWritten(file)
          continue
        }
        let launched: Launched
        // Refused rows: the file's, plus any the launch refused (a number put on the do-not-call list since).
        let rejects = prepared.rejects
        if (earlier) {
          // Launched by a run that stopped before moving the file: its contacts are called all the same — the ones it held
          // back by its waiting file (marking them this file's rejected every row of that file, and they were never called).
          launched = earlier
          const held = new Set(earlier.held_back.map((row) => row.customer_phone))
          for (const row of prepared.rows) calledBy.set(row.customer_phone!, { file: held.has(row.customer_phone) && earlier.waiting_file ? earlier.waiting_file : file, uploaded: true })
        } else {
          if (!ctx.dryRun) await ctx.state.set(launchedKey, { uploading: ctx.now.toISOString() })
          uploading = true
          const result = await ctx.campaigns.launchBatch({ agentId: AGENT_ID, name, campaign: list, rows: prepared.rows, rejects: prepared.rejects, columns: prepared.columns, window: CALLING_WINDOW })
          uploading = false
          rejects = result.rejects
          const opensAt = result.deferred.reduce<string | null>((first, d) => (first === null || d.opensAt < first ? d.opensAt : first), null)
          for (const row of result.rows) calledBy.set(row.customer_phone!, { file, uploaded: true })
          // Nothing in a waiting file's window yet (and nothing newly refused, none called by another file of this run): it
          // stays as it is for a later run. (Left as it was with contacts another file calls now, it called them again.)
          if (waiting && result.rows.length === 0 && result.deferred.length === prepared.rows.length && prepared.stats.excluded === 0) {
            if (!ctx.dryRun) await ctx.state.delete(launchedKey)
            for (const d of result.deferred) calledBy.set(d.row.customer_phone!, { file, uploaded: true })
            outcomes.push({ file, batch_id: null, batch: name, rows: 0, rejects: 0, waiting: result.deferred.length, waiting_file: file, opens_at: opensAt, moved_to: null })
            continue
          }
          // Named by this version of the file: a run that fails after the launch writes the same file again, never a
          // second copy of these contacts.
          const waitingFile = result.deferred.length > 0 && !ctx.dryRun ? `${WAITING}/${cutToBytes(list, NAME_MAX_BYTES - '.01234567.csv.part'.length)}.${createHash('sha256').update(launchedKey).digest('hex').slice(0, 8)}.csv` : null
          launched = { batch_id: result.batch?.id ?? null, rows: result.rows.length, waiting: result.deferred.length, waiting_file: waitingFile, opens_at: opensAt, held_back: result.deferred.map((d) => d.row), warnings: result.warnings }
          for (const d of result.deferred) calledBy.set(d.row.customer_phone!, { file: waitingFile ?? file, uploaded: true })
          // Recorded before anything else can fail (writing the waiting file on a full disk, say): whatever fails
          // next, the next run finds the batch launched and does not upload these contacts again.
          if (!ctx.dryRun) await ctx.state.set(launchedKey, launched)
        }
        if (launched.waiting_file && !existsSync(join(inbox, launched.waiting_file))) {
          await mkdir(waitingDir, { recursive: true })
          const partial = join(inbox, `${launched.waiting_file}.part`)
          await ctx.campaigns.writeBatchCsv(partial, launched.held_back, [...new Set(launched.held_back.flatMap((row) => Object.keys(row)))])
          await rename(partial, join(inbox, launched.waiting_file))
        }
        let movedTo: string | null = null
        /** Why a launched file went to failed/ instead of done/. */
        let archiveError: string | undefined
        if (!ctx.dryRun) {
          try {
            await mkdir(done, { recursive: true })
            const [moved, rejectsFile] = freeNames(done, basename(file), (ext) => [ext, '.rejects.csv'])
            // Written to while its batch was uploaded (checked again as late as can be): moved to done/, the rows added
            // would have gone with it uncalled.
            if (!waiting && version(await stat(path)) !== version(info)) {
              throw new Error('it was written to while its batch was being uploaded: the rows read before that were launched, any added since were not — put those alone in a new file')
            }
            await ctx.campaigns.writeRejectsCsv(rejectsFile!, rejects)
            await rename(path, moved!)
            movedTo = moved!
          } catch (error) {
            // Launched, but not archived (done/ unwritable, say): left in the inbox it would fail every run from now on.
            // Parked instead, saying it was launched — dropped in again it would be called again.
            const batch = launched.batch_id === null ? 'no batch (no row to call now)' : `batch ${launched.batch_id}`
            archiveError = `${shown(file)} was launched as ${batch} (${launched.rows} row${launched.rows === 1 ? '' : 's'}, ${launched.waiting} waiting, ${rejects.length} rejected) but could not be moved to done/ (${shown((error as Error).message)}): parked here so later runs do not fail on it; do not drop it in again`
            ctx.log.error({ file, err: error }, 'launched inbox file could not be moved to done/; parked in failed/')
            movedTo = await park(file, archiveError)
          }
          await ctx.state.delete(launchedKey)
        }
        // The file's (prepareBatch) and the launch's (launchBatch, which logs its own).
        const allWarnings = [...prepared.warnings, ...(launched.warnings ?? [])]
        const warnings = allWarnings.length ? { warnings: allWarnings } : {}
        const { batch_id, rows, waiting: held, waiting_file, opens_at } = launched
        outcomes.push({ file, batch_id, batch: name, rows, rejects: rejects.length, waiting: held, waiting_file, opens_at, moved_to: movedTo, ...warnings, ...(archiveError ? { error: archiveError } : {}) })
        for (const warning of prepared.warnings) ctx.log.warn({ file }, warning)
        ctx.log.info({ file, batch_id, rows, rejects: rejects.length, waiting: held, opens_at }, 'inbox file processed')
      } catch (error) {
        // ContactsError messages are one printable line, whatever the file holds (a binary file's "header").
        const reason = parkReason(error, name)
        const unsent = unsentReason(error, name)
        const message = reason ?? unsent ?? (error as Error).message
        const parkable = reason !== undefined
        // Read but not uploaded (a 429, the provider unreachable, an answer lost): its contacts stay its own for the rest
        // of this run, so no later file calls them now and this one again when it goes.
        for (const row of prepared?.rows ?? []) if (!calledBy.has(row.customer_phone!)) calledBy.set(row.customer_phone!, { file, uploaded: false })
        // A launch that failed cleared nothing it had not created (429, 401, the provider unreachable, the do-not-call
        // list unreadable: tried again next run) or is parked below; either way the mark of an upload under way goes.
        if ((uploading || parkable) && !ctx.dryRun) await ctx.state.delete(launchedKey)
        if (unsent) ctx.log.error({ file, err: unsent }, 'provider unreachable, nothing uploaded: inbox file left in place for the next run')
        else ctx.log.error({ file, err: parkable ? message : error }, 'inbox file could not be processed')
        const outcome = { file, batch_id: null, batch: name, rows: 0, rejects: 0, waiting: 0, waiting_file: null, opens_at: null, moved_to: parkable ? await park(file, message) : null, error: message }
        outcomes.push(outcome)
        if (!parkable) unparked.push(outcome)
      }
    }
    if (unparked.length) {
      // Files left in place (the provider failed, say) are retried next night; say so loudly.
      throw new Error(`could not process ${unparked.map((o) => `${o.file} (${o.error})`).join('; ')}`)
    }
    return { files: outcomes.length, batches: outcomes, ...(settling.length ? { modified_in_the_last_minute: settling } : {}), ...(skipped.length ? { skipped } : {}) }
  },
})
