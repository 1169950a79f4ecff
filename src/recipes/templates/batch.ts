import { mkdir, readdir, rename, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { defineRecipe } from 'switchboard'

// A batch recipe: every contacts CSV dropped in DATA_DIR/inbox/__NAME__/ becomes one cleaned batch call (numbers
// in E.164, duplicates and do-not-call numbers removed, each rejected row reported with its reason); the file then
// moves to done/ beside it, so it is launched once.
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

export default defineRecipe({
  description: `Launches one batch per CSV in DATA_DIR/${INBOX}/ for agent ${AGENT_ID}, then moves the file to ${INBOX}/done/`,
  // 10:00 every day in RECIPES_TIMEZONE (croner pattern): the provider calls a batch as soon as it is uploaded,
  // so launch it inside the calling window (09:00–21:00 in each contact's own time).
  schedule: '0 10 * * *',
  async run(ctx) {
    const inbox = join(ctx.config.dataDir, INBOX)
    const done = join(inbox, 'done')
    const heldBackDir = join(inbox, 'held-back')
    const entries = await readdir(inbox, { withFileTypes: true }).catch(() => [])
    const files = entries.filter((e) => e.isFile() && e.name.toLowerCase().endsWith('.csv')).map((e) => e.name).sort()
    const batches = []
    for (const file of files) {
      const path = join(inbox, file)
      // A launch that succeeded before a crash (the file not yet moved) is not launched again: the key names this
      // version of the file, and it is recorded before the file moves.
      const info = await stat(path)
      const launchedKey = `launched:${file}:${info.size}:${Math.trunc(info.mtimeMs)}`
      const earlier = ctx.dryRun ? undefined : await ctx.state.get<{ batch_id: number | null }>(launchedKey)
      let outcome = { file, batch_id: earlier?.batch_id ?? null, rows: 0, rejects: 0, held_back: 0, held_back_file: null as string | null }
      if (!earlier) {
        // Normalize, dedupe and DNC-check in one pass; `rejects` lists row, raw value and reason.
        const prepared = await ctx.campaigns.prepareBatch(path)
        // In a dry run (`recipes run --dry-run`, `recipes test`) this only goes into the plan.
        const launched = await ctx.campaigns.launchBatch({
          agentId: AGENT_ID,
          name: `${file.replace(/\.csv$/i, '')}-${ctx.now.toISOString().slice(0, 10)}`,
          rows: prepared.rows,
          rejects: prepared.rejects,
          columns: prepared.columns,
        })
        outcome = { ...outcome, batch_id: launched.batch?.id ?? null, rows: launched.rows.length, rejects: launched.rejects.length, held_back: launched.deferred.length }
        // Contacts whose calling window is closed now (another time zone) are not uploaded: they are written to
        // held-back/ for you to drop in again later (nightly-batch does this by itself, hourly).
        if (launched.deferred.length > 0 && !ctx.dryRun) {
          await mkdir(heldBackDir, { recursive: true })
          outcome.held_back_file = join(heldBackDir, file)
          const rows = launched.deferred.map((d) => d.row)
          await ctx.campaigns.writeBatchCsv(outcome.held_back_file, rows, [...new Set(rows.flatMap((row) => Object.keys(row)))])
        }
        if (!ctx.dryRun) await ctx.state.set(launchedKey, { batch_id: outcome.batch_id })
      }
      if (!ctx.dryRun) {
        await mkdir(done, { recursive: true })
        await rename(path, join(done, file))
        await ctx.state.delete(launchedKey)
      }
      batches.push(outcome)
    }
    return { batches }
  },
})
