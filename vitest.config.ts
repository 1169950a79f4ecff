import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: ['test/bench/**', 'test/faults/**', 'node_modules/**'],
    testTimeout: 20_000,
    hookTimeout: 30_000,
    pool: 'forks',
    globalSetup: ['test/helpers/global-setup.ts'],
    // Two cores: more workers only add contention.
    maxWorkers: 2,
    env: { LOG_LEVEL: 'silent' },
  },
})
