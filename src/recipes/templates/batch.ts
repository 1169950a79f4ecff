import { existsSync } from 'node:fs'
import { mkdir, readdir, rename, stat, writeFile } from 'node:fs/promises'
import { basename, extname, join } from 'node:path'
import { defineRecipe } from 'switchboard'

// A batch recipe: every contacts CSV dropped in DATA_DIR/inbox/__NAME__/ becomes one cleaned batch call (numbers
// in E.164, duplicates and do-not-call numbers removed, each rejected row reported with its reason); the file then
// moves to done/ beside its rejects, so it is launched once.
// Try it without a provider:
//   npm run -s cli -- recipes test __NAME__ --csv data/samples/leads.csv
// Reference: docs/recipes.md (every ctx member, with examples); recipes/nightly-batch.ts does the same with
// more care (hourly runs that keep contacts outside their calling window for later, unreadable files parked).

// ── Settings ────────────────────────────────────────────────────────────────────────────────────
/** The agent that places the calls (sandbox: 101). */
const AGENT_ID = 101
/**
 * Where contact files are dropped, relative to DATA_DIR: this recipe's own folder. The shipped nightly-batch reads
 * inbox/ itself, and two recipes reading one folder would each launch every file in it.
 */
const INBOX = 'inbox/__NAME__'

/** What a launch did, recorded until its file has moved to done/. */
interface Launched {
  batch_id: number | null
  rows: number
  rejects: Array<{ row: number; raw: string; reason: string }>
  /** Contacts whose calling window was closed, and the file they go to. */
  held_back: Array<Record<string, string>>
  held_back_file: string | null
  /** What did not stop the launch but should be seen (rows read with a guessed country or time zone, say). */
  warnings?: string[]
}

/**
 * `leads.csv` → a free path in `dir` whose companions (`leads.rejects.csv`, from `companions`) are free too: a second
 * `leads.csv` on another day becomes `leads-2.csv`, and so does a `leads.csv` whose rejects would overwrite an
 * archived list named `leads.rejects.csv`.
 */
function freePath(dir: string, file: string, companions: (path: string) => string[] = () => []): string {
  const ext = extname(file)
  const stem = basename(file, ext)
  let candidate = join(dir, file)
  for (let i = 2; [candidate, ...companions(candidate)].some((path) => existsSync(path)); i++) candidate = join(dir, `${stem}-${i}${ext}`)
  return candidate
}
const rejectsOf = (path: string) => path.replace(/\.csv$/i, '.rejects.csv')
/** `leads.csv` → `leads`; a held-back part `leads.2026-03-18.csv` → `leads` (its list: it names batch and campaign). */
const listOf = (file: string) => basename(file, extname(file)).replace(/\.\d{4}-\d{2}-\d{2}$/, '')

export default defineRecipe({
  description: `Launches one batch per CSV in DATA_DIR/${INBOX}/ for agent ${AGENT_ID}, then moves the file to ${INBOX}/done/`,
  // 10:00 every day in RECIPES_TIMEZONE (croner pattern): the provider calls a batch as soon as it is uploaded,
  // so launch it inside the calling window (09:00–21:00 in each contact's own time).
  schedule: '0 10 * * *',
  async run(ctx) {
    const inbox = join(ctx.config.dataDir, INBOX)
    const done = join(inbox, 'done')
    const entries = await readdir(inbox, { withFileTypes: true }).catch(() => [])
    const files = entries.filter((e) => e.isFile() && e.name.toLowerCase().endsWith('.csv')).map((e) => e.name).sort()
    const batches = []
    for (const file of files) {
      const path = join(inbox, file)
      const day = ctx.now.toISOString().slice(0, 10)
      // The key names this version of the file. Before the upload it holds a mark; right after, what the launch did:
      // whatever fails next (a full disk, a crash), the next run does not upload these contacts again.
      const info = await stat(path)
      const launchedKey = `launched:${file}:${info.size}:${Math.trunc(info.mtimeMs)}`
      const earlier = ctx.dryRun ? undefined : await ctx.state.get<Launched | { uploading: string }>(launchedKey)
      if (earlier && 'uploading' in earlier) {
        // A run stopped during the upload: the batch may exist. Moved aside for a person to check the provider's
        // dashboard (batch uploads have no idempotency key: uploading again could call every contact twice).
        const failed = join(inbox, 'failed')
        await mkdir(failed, { recursive: true })
        const movedTo = freePath(failed, file, (path) => [`${path}.error.txt`])
        await rename(path, movedTo)
        await writeFile(`${movedTo}.error.txt`, `a run stopped while uploading this file (at ${earlier.uploading}): check the provider for the batch before dropping it in again\n`)
        await ctx.state.delete(launchedKey)
        ctx.log.error({ file, moved_to: movedTo }, 'a run stopped while uploading this file; moved to failed/')
        batches.push({ file, batch_id: null, rows: 0, rejects: 0, held_back: 0, held_back_file: null, moved_to: movedTo })
        continue
      }
      let launched = earlier
      if (!launched) {
        // Normalize, dedupe and DNC-check in one pass; `rejects` lists row, raw value and reason.
        const prepared = await ctx.campaigns.prepareBatch(path)
        if (!ctx.dryRun) await ctx.state.set(launchedKey, { uploading: ctx.now.toISOString() })
        // In a dry run (`recipes run --dry-run`, `recipes test`) this only goes into the plan.
        // The batch is named by list and day; its campaign is the list, so the same list sent again on another day (or
        // held back and dropped in again) stays one campaign: the report's rows, and the follow-ups' cap per contact.
        const list = listOf(file)
        const result = await ctx.campaigns
          .launchBatch({ agentId: AGENT_ID, name: `${list}-${day}`, campaign: list, rows: prepared.rows, rejects: prepared.rejects, columns: prepared.columns })
          .catch(async (error: unknown) => {
            // Failed before or at the upload: tried again next run (see nightly-batch for which failures to park).
            if (!ctx.dryRun) await ctx.state.delete(launchedKey)
            throw error
          })
        // Contacts whose calling window is closed now (another time zone) are not uploaded: they are written to
        // held-back/ (one file per list and day) for you to drop in again later (nightly-batch does this by itself).
        const heldBack = result.deferred.map((d) => d.row)
        const heldBackFile = heldBack.length > 0 && !ctx.dryRun ? freePath(join(inbox, 'held-back'), `${list}.${day}.csv`) : null
        launched = { batch_id: result.batch?.id ?? null, rows: result.rows.length, rejects: result.rejects, held_back: heldBack, held_back_file: heldBackFile, warnings: [...prepared.warnings, ...result.warnings] }
        if (!ctx.dryRun) await ctx.state.set(launchedKey, launched)
      }
      if (launched.held_back_file && !existsSync(launched.held_back_file)) {
        await mkdir(join(inbox, 'held-back'), { recursive: true })
        const rows = launched.held_back
        await ctx.campaigns.writeBatchCsv(launched.held_back_file, rows, [...new Set(rows.flatMap((row) => Object.keys(row)))])
      }
      let movedTo: string | null = null
      if (!ctx.dryRun) {
        await mkdir(done, { recursive: true })
        movedTo = freePath(done, file, (path) => [rejectsOf(path)])
        // `leads.csv` → done/leads.csv beside done/leads.rejects.csv (row, raw value, reason).
        await ctx.campaigns.writeRejectsCsv(rejectsOf(movedTo), launched.rejects)
        await rename(path, movedTo)
        await ctx.state.delete(launchedKey)
      }
      const { batch_id, rows, rejects, held_back, held_back_file, warnings = [] } = launched
      // Shown with the run (dashboard, `recipes run`); launchBatch and prepareBatch log them too.
      batches.push({ file, batch_id, rows, rejects: rejects.length, held_back: held_back.length, held_back_file, moved_to: movedTo, ...(warnings.length ? { warnings } : {}) })
    }
    return { batches }
  },
})
