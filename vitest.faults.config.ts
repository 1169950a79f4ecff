import { defineConfig } from 'vitest/config'

/**
 * The fault suite (`npm run test:faults`): real processes, real Postgres (when DATABASE_URL_TEST is
 * set), a real SMTP server, the sandbox as the provider. Cases run one file at a time: they measure
 * recovery times, which a second busy worker on two cores would only blur.
 */
export default defineConfig({
  test: {
    include: ['test/faults/**/*.test.ts'],
    testTimeout: 120_000,
    hookTimeout: 60_000,
    pool: 'forks',
    globalSetup: ['test/helpers/global-setup.ts'],
    setupFiles: ['test/helpers/isolated-cwd.ts'],
    maxWorkers: 1,
    fileParallelism: false,
    env: { LOG_LEVEL: 'silent' },
  },
})
