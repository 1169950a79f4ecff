import { randomBytes } from 'node:crypto'
import { existsSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { installationCacheDir } from '../../src/utils/installation-cache.ts'
import { makeRunShippedRecipes } from './recipes.ts'

/**
 * Each test run gets an id; its Postgres schemas and its test processes' SQLite templates are named after it and
 * removed here, once, after every worker has finished. Dropping schemas as each test ends raced with other workers'
 * migrations: kysely's introspection reads every schema's tables and fails when one disappears mid-query. The
 * templates were left to each process's 'exit', which a worker the pool ends does not always run: ~90 of them piled
 * up in /tmp over a few days of runs.
 */
export async function setup(): Promise<void> {
  process.env.SB_TEST_RUN ??= randomBytes(3).toString('hex')
  // The shipped recipes, copied once for the run's tests of the service as shipped (test/helpers/recipes.ts).
  process.env.SB_SHIPPED_RECIPES = makeRunShippedRecipes(process.env.SB_TEST_RUN)
  // Processing threads the tests start in-process (startServer, startProcessingThread) load the bundle `serve` runs
  // (src/bundle.mjs), as the executable's threads do: from the sources each thread registered tsx and loaded ~180
  // modules through a loader thread of its own, a second or two of CPU per thread, ~70 threads a run.
  const { bundledEntries } = await import('../../src/bundle.mjs')
  const bundle = await bundledEntries()
  if (bundle) process.env.SWITCHBOARD_PROCESSING_ENTRY = bundle['processing-thread']
  // The browser tests' Chromium (test/helpers/browser.ts) is unpacked from its npm package into the temp folder on first
  // use; unpacked here, once, before any worker starts. Left to the workers, the browser test files of a fresh machine's
  // first run each found it missing and unpacked it at the same time, and one launched it while another was still
  // writing it (spawn ETXTBSY).
  await (await import('@sparticuz/chromium')).default.executablePath()
}

export async function teardown(): Promise<void> {
  const url = process.env.DATABASE_URL_TEST
  const run = process.env.SB_TEST_RUN
  if (run) {
    // test/helpers/db.ts's SQLITE_TEMPLATE_PREFIX and run id (not imported: that module loads the service's store).
    const prefix = `sb-db-template-${run}-`
    for (const name of readdirSync(tmpdir())) if (name.startsWith(prefix)) rmSync(join(tmpdir(), name), { recursive: true, force: true })
    // The test files' working directory (test/helpers/isolated-cwd.ts), and what a test left in it.
    rmSync(join(tmpdir(), `sb-test-cwd-${run}`), { recursive: true, force: true })
    rmSync(join(tmpdir(), `sb-shipped-recipes-${run}`), { recursive: true, force: true })
  }
  // The recipes the tests wrote to temporary folders (all named sb-…), as jiti compiled them into the installation's
  // cache (src/recipes/loader.ts): one file per path, so each run added ~200 that no later run would read.
  const jiti = installationCacheDir('jiti')
  for (const name of existsSync(jiti) ? readdirSync(jiti) : []) if (name.startsWith('sb-')) rmSync(join(jiti, name), { force: true })
  if (!url || !run) return
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    const { rows } = await client.query<{ nspname: string }>(`select nspname from pg_namespace where nspname like $1`, [`sb_test_${run}_%`])
    for (const { nspname } of rows) await client.query(`drop schema if exists "${nspname}" cascade`)
  } finally {
    await client.end()
  }
}
