import { mkdirSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/**
 * Test files run in an empty working directory, not the checkout: the service looks for `switchboard.config.ts` (and
 * resolves `./data`, `./recipes`) in the working directory, and a developer's own config file in the checkout —
 * with real DESTINATIONS, say — must never meet the tests' made-up events. Processes the tests start from the
 * checkout (`npm start`) get SWITCHBOARD_CONFIG=none (test/cli/processes.ts) for the same reason.
 */
const dir = join(tmpdir(), `sb-test-cwd-${process.env.SB_TEST_RUN ?? 'run'}`)
mkdirSync(dir, { recursive: true })
process.chdir(dir)
