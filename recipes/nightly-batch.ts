import { existsSync } from 'node:fs'
import { mkdir, readdir, rename, stat, writeFile } from 'node:fs/promises'
import { basename, extname, join } from 'node:path'
import { defineRecipe } from 'switchboard'

// ── Settings: edit these ────────────────────────────────────────────────────────────────────────
/** The agent that calls every batch (sandbox: 101 is Acme's outbound agent). */
const AGENT_ID = 101
/** When to pick up the files: 01:00 every night, in RECIPES_TIMEZONE (or TIMEZONE below). */
const SCHEDULE = '0 1 * * *'
/** Leave undefined to use RECIPES_TIMEZONE. */
const TIMEZONE: string | undefined = undefined
/** Drop contact CSVs here (relative to DATA_DIR). Write them elsewhere and move them in, so a half-copied file is never read. */
const INBOX = 'inbox'
/** Extra header names to read as the phone column, beyond customer_phone/phone/mobile/contact_number/msisdn/… */
const PHONE_ALIASES: string[] = []

interface FileOutcome {
  file: string
  batch_id: number | null
  batch: string
  rows: number
  rejects: number
  moved_to: string | null
  /** The file was read, but not as written (a Latin-1 CSV transcoded): check the names in the batch. */
  warnings?: string[]
  error?: string
}

/** Files still being written by a copy or a download: left alone until they are renamed. */
const IN_PROGRESS = /\.(part|partial|tmp|temp|crdownload|download|swp)$|~$/i

/** `name.csv` → a free path in `dir` (a second `name.csv` on another night becomes `name-2.csv`). */
function freePath(dir: string, file: string): string {
  const ext = extname(file)
  const stem = basename(file, ext)
  let candidate = join(dir, file)
  for (let i = 2; existsSync(candidate); i++) candidate = join(dir, `${stem}-${i}${ext}`)
  return candidate
}

export default defineRecipe({
  description: `Every CSV in DATA_DIR/${INBOX}/ becomes one cleaned batch for agent ${AGENT_ID}; the file then moves to ${INBOX}/done/ beside its rejects CSV (unreadable files to ${INBOX}/failed/)`,
  schedule: SCHEDULE,
  timezone: TIMEZONE,
  async run(ctx) {
    const inbox = join(ctx.config.dataDir, INBOX)
    const done = join(inbox, 'done')
    const failed = join(inbox, 'failed')
    const entries = existsSync(inbox)
      ? (await readdir(inbox, { withFileTypes: true }))
          .filter((e) => e.isFile() && !e.name.startsWith('.') && !IN_PROGRESS.test(e.name))
          .map((e) => e.name)
          .sort()
      : []
    const files = entries.filter((f) => f.toLowerCase().endsWith('.csv'))
    const outcomes: FileOutcome[] = []
    /** Parks a file that can never become a batch in failed/, with its reason beside it, so it fails one night only. */
    const park = async (file: string, reason: string): Promise<string | null> => {
      if (ctx.dryRun) return null
      await mkdir(failed, { recursive: true })
      const movedTo = freePath(failed, file)
      await rename(join(inbox, file), movedTo)
      await writeFile(`${movedTo}.error.txt`, reason + '\n')
      return movedTo
    }
    for (const file of entries.filter((f) => !files.includes(f))) {
      const reason = `${file} is not a CSV file (the inbox reads *.csv only); export it as "CSV UTF-8" and drop the .csv in`
      ctx.log.warn({ file }, reason)
      outcomes.push({ file, batch_id: null, batch: '', rows: 0, rejects: 0, moved_to: await park(file, reason), error: reason })
    }
    const day = new Intl.DateTimeFormat('en-CA', { timeZone: ctx.timezone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(ctx.now)
    const unparked: FileOutcome[] = []
    for (const file of files) {
      const path = join(inbox, file)
      const list = basename(file, extname(file))
      // The batch is named by list and night (as the provider's dashboard shows it); its campaign is the list's
      // name, so a list sent again on another night stays one campaign (the report's rows, the follow-up cap).
      const name = `${list}-${day}`
      // A launch that succeeded before a crash (file not yet moved) must not be launched again.
      const info = await stat(path)
      const launchedKey = `launched:${file}:${info.size}:${Math.trunc(info.mtimeMs)}`
      try {
        const prepared = await ctx.campaigns.prepareBatch(path, { phoneAliases: PHONE_ALIASES, name: file })
        const earlier = await ctx.state.get<{ batch_id: number | null }>(launchedKey)
        const result = earlier && !ctx.dryRun
          ? { batch: null, rows: prepared.rows, rejects: prepared.rejects, reused: earlier.batch_id }
          : await ctx.campaigns.launchBatch({ agentId: AGENT_ID, name, campaign: list, rows: prepared.rows, rejects: prepared.rejects, columns: prepared.columns })
        const batchId = 'reused' in result ? result.reused : (result.batch?.id ?? null)
        let movedTo: string | null = null
        if (!ctx.dryRun) {
          await ctx.state.set(launchedKey, { batch_id: batchId })
          await mkdir(done, { recursive: true })
          movedTo = freePath(done, file)
          await ctx.campaigns.writeRejectsCsv(movedTo.replace(/\.csv$/i, '.rejects.csv'), result.rejects)
          await rename(path, movedTo)
          await ctx.state.delete(launchedKey)
        }
        const warnings = prepared.warnings.length ? { warnings: prepared.warnings } : {}
        outcomes.push({ file, batch_id: batchId, batch: name, rows: result.rows.length, rejects: result.rejects.length, moved_to: movedTo, ...warnings })
        for (const warning of prepared.warnings) ctx.log.warn({ file }, warning)
        ctx.log.info({ file, batch_id: batchId, rows: result.rows.length, rejects: result.rejects.length }, 'inbox file processed')
      } catch (error) {
        // ContactsError messages are one printable line, whatever the file holds (a binary file's "header").
        const message = (error as Error).message
        // A file that cannot be read as contacts (binary, no phone column) would fail every night: park it.
        const parkable = (error as Error).name === 'ContactsError'
        ctx.log.error({ file, err: parkable ? message : error }, 'inbox file could not be processed')
        const outcome = { file, batch_id: null, batch: name, rows: 0, rejects: 0, moved_to: parkable ? await park(file, message) : null, error: message }
        outcomes.push(outcome)
        if (!parkable) unparked.push(outcome)
      }
    }
    if (unparked.length) {
      // Files left in place (the provider failed, say) are retried next night; say so loudly.
      throw new Error(`could not process ${unparked.map((o) => `${o.file} (${o.error})`).join('; ')}`)
    }
    return { files: outcomes.length, batches: outcomes }
  },
})
