import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadConfig, type Config } from '../../src/config/load.ts'
import type { Dialect } from '../../src/db/connect.ts'
import { createRuntime, type Runtime } from '../../src/runtime.ts'
import { createManualClock, type Clock } from '../../src/utils/clock.ts'
import { createSilentLogger, type Logger } from '../../src/utils/logger.ts'
import { createSeededRandom, type Random } from '../../src/utils/random.ts'
import { openTestStore, type TestStore } from './db.ts'
import { FIXTURE_RECIPES_DIR } from './recipes.ts'

let seed = 42

export interface TestRuntime extends Runtime {
  store: TestStore
  dataDir: string
}

/**
 * A runtime for tests: temp DATA_DIR, a fresh migrated store of the given dialect, a manual clock and a
 * seeded random unless given, silent logs. `env` overrides configuration as the environment would.
 */
export async function createTestRuntime(
  options: { dialect?: Dialect; env?: Record<string, string>; clock?: Clock; random?: Random; log?: Logger } = {},
): Promise<TestRuntime> {
  const dataDir = mkdtempSync(join(tmpdir(), 'sb-data-'))
  const store = await openTestStore(options.dialect ?? 'sqlite')
  const config: Config = loadConfig({
    // The fixture recipes folder unless a test names its own: never the user's `recipes/`. Type-checking
    // (a second of CPU per new recipe) only where a test asks for it (test/recipes/typecheck.test.ts).
    env: { DATA_DIR: dataDir, WEBHOOK_SECRET: 'whsec_test_secret', PORT: '0', LOG_LEVEL: 'silent', RECIPES_DIR: FIXTURE_RECIPES_DIR, RECIPES_TYPECHECK: 'false', ...options.env },
  })
  const rt = await createRuntime(config, {
    store,
    skipMigrate: true,
    clock: options.clock ?? createManualClock(),
    // Each runtime its own seed: two runtimes on one database (replica tests) must not mint the same ids.
    random: options.random ?? createSeededRandom(seed++),
    log: options.log ?? createSilentLogger(),
  })
  const close = rt.close
  return Object.assign(rt, {
    store,
    dataDir,
    async close() {
      await close()
      await store.close()
      rmSync(dataDir, { recursive: true, force: true })
    },
  })
}
