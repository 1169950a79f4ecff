import { defineConfig } from 'vitest/config'
import { WAIT_MS } from './test/helpers/wait-ms.ts'

export default defineConfig({
  test: {
    // The team's tests of its recipes, beside them (docs/recipes.md → Testing a recipe in vitest), run with the rest.
    include: ['test/**/*.test.ts', 'recipes/**/*.test.ts'],
    exclude: ['test/bench/**', 'test/faults/**', 'node_modules/**'],
    testTimeout: 20_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // Test files share their worker process (and its loaded modules) instead of each starting a fresh one:
    // importing the service's sources anew for each of ~90 files was ~115 s of the suite's CPU (15 s shared),
    // and the whole suite ran 300 s against 195 s on two cores. Files leave no state behind them: every
    // runtime, store, server and thread a test opens it closes, spies and fake timers are restored, and no
    // test changes process.env.
    isolate: false,
    globalSetup: ['test/helpers/global-setup.ts'],
    setupFiles: ['test/helpers/isolated-cwd.ts', 'test/helpers/wait-defaults.ts'],
    // A poll that names no timeout waits as long as a vi.waitFor (test/helpers/wait-ms.ts).
    expect: { poll: { timeout: WAIT_MS } },
    // Three on two cores: a sixth of the suite's time both workers waited (a real-time watchdog, child processes
    // starting, kill -9 and restart), and a third worker fills those gaps — 219 → 186 s on the same machine, the same
    // CPU. With two, more workers only added contention while type checks took a third of the CPU. Its waits allow
    // for the added contention (test/helpers/wait-defaults.ts).
    maxWorkers: 3,
    env: { LOG_LEVEL: 'silent' },
  },
})
