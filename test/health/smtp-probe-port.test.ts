import { afterEach, expect, it } from 'vitest'
import { checkDependency } from '../../src/health/dependencies.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'

let rt: TestRuntime | undefined
afterEach(async () => {
  await rt?.close()
  rt = undefined
})

// nodemailer sends to 587 when SMTP_URL names no port (smtps://: 465); the probe connected to 25, and said a relay on
// 587 alone was down while mail went out through it — and a relay on 25 alone up while every report waited.
it('/readyz probes the SMTP relay on the port mail goes to: 587 for smtp:// with no port', async () => {
  rt = await createTestRuntime({ env: { SMTP_URL: 'smtp://127.0.0.1' } })
  const status = await checkDependency(rt, 'smtp')
  expect(status).toMatchObject({ state: 'down', error: expect.stringContaining('127.0.0.1:587') })
})
