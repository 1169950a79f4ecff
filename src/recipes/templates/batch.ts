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
  // 01:00 every night in RECIPES_TIMEZONE (croner pattern).
  schedule: '0 1 * * *',
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
      batches.push({ file, batch_id: launched.batch?.id ?? null, rows: launched.rows.length, rejects: launched.rejects.length })
    }
    // A real recipe would move each file away once launched (see recipes/nightly-batch.ts).
    return { batches }
  },
})
