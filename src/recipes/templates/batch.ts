import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { defineRecipe } from 'switchboard'

// A batch recipe: every contacts CSV in DATA_DIR/inbox/ becomes one cleaned batch call (numbers in
// E.164, duplicates and do-not-call numbers removed, each rejected row reported with its reason).
// Try it without a provider:
//   npm run -s cli -- recipes test __NAME__ --csv data/samples/leads.csv
// Reference: docs/recipes.md (every ctx member, with examples).

// ── Settings ────────────────────────────────────────────────────────────────────────────────────
/** The agent that places the calls (sandbox: 101). */
const AGENT_ID = 101
/** Where contact files are dropped, relative to DATA_DIR. */
const INBOX = 'inbox'

export default defineRecipe({
  description: `Launches one batch per CSV in DATA_DIR/${INBOX}/ for agent ${AGENT_ID}`,
  // 10:00 every day in RECIPES_TIMEZONE (croner pattern): the provider calls a batch as soon as it is uploaded,
  // so launch it inside the calling window (09:00–21:00 in each contact's own time).
  schedule: '0 10 * * *',
  async run(ctx) {
    const inbox = join(ctx.config.dataDir, INBOX)
    const files = (await readdir(inbox).catch(() => [] as string[])).filter((f) => f.toLowerCase().endsWith('.csv')).sort()
    const batches = []
    for (const file of files) {
      // Normalize, dedupe and DNC-check in one pass; `rejects` lists row, raw value and reason.
      const prepared = await ctx.campaigns.prepareBatch(join(inbox, file))
      // In a dry run (`recipes run --dry-run`, `recipes test`) this only goes into the plan.
      const launched = await ctx.campaigns.launchBatch({
        agentId: AGENT_ID,
        name: `${file.replace(/\.csv$/i, '')}-${ctx.now.toISOString().slice(0, 10)}`,
        rows: prepared.rows,
        rejects: prepared.rejects,
        columns: prepared.columns,
      })
      // Contacts whose calling window is closed now (another time zone) are not uploaded: `launched.deferred`
      // lists them with when their window opens (recipes/nightly-batch.ts keeps them for a later run).
      batches.push({ file, batch_id: launched.batch?.id ?? null, rows: launched.rows.length, rejects: launched.rejects.length, held_back: launched.deferred.length })
    }
    // A real recipe would move each file away once launched (see recipes/nightly-batch.ts).
    return { batches }
  },
})
