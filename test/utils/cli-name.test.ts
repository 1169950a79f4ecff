import { expect, it } from 'vitest'
import { cliName } from '../../src/utils/cli-name.ts'

it('names the CLI as it is run beside the process: npm run -s cli -- from a checkout (the CLI itself, or npm start), else switchboard', () => {
  expect(cliName({ npm_lifecycle_event: 'cli' })).toBe('npm run -s cli --')
  // A warning serve prints at start names a command to run: under `npm start`, the checkout's.
  expect(cliName({ npm_lifecycle_event: 'start' })).toBe('npm run -s cli --')
  expect(cliName({})).toBe('switchboard')
  expect(cliName({ npm_lifecycle_event: 'test' })).toBe('switchboard')
})
