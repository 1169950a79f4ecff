import { afterEach, expect, it } from 'vitest'
import { main } from '../../src/cli.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { shippedRecipesDir } from '../helpers/recipes.ts'
import { DAY, seedKnownDay } from './seed.ts'

/**
 * `report send` and `recipes run` printed the service's JSON log lines to stderr between their readable output
 * ({"level":30,"time":1796122266673,"mail_id":…,"msg":"mail written to the outbox"}). Without --json, a person reads
 * them: one readable line each. With --json they stay JSON lines, as the service's log is.
 */
let rt: TestRuntime | undefined
let recipes: ReturnType<typeof shippedRecipesDir> | undefined
afterEach(async () => {
  await rt?.close()
  recipes?.cleanup()
  rt = recipes = undefined
})

async function run(argv: string[], env: Record<string, string>) {
  let stdout = ''
  let stderr = ''
  const code = await main(argv, { env, stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) })
  return { code, stdout, stderr }
}

async function setup() {
  rt = await createTestRuntime()
  await seedKnownDay(rt)
  recipes = shippedRecipesDir('daily-report')
  return {
    DATABASE_URL: rt.store.url, DATA_DIR: rt.dataDir, WEBHOOK_SECRET: 'whsec_test_secret', VOICE_API_KEY: 'sk_live_report', VOICE_API_BASE_URL: 'http://127.0.0.1:9',
    RECIPES_TIMEZONE: 'Asia/Kolkata', RECIPES_DIR: recipes.dir, RECIPES_TYPECHECK: 'false', REPORT_TO: 'ops@example.com', LOG_LEVEL: 'info',
  }
}

it('report send and recipes run print readable log lines in human mode, not JSON', async () => {
  const env = await setup()
  const sent = await run(['report', 'send', '--date', DAY], env)
  expect(sent.code).toBe(0)
  const lines = sent.stderr.trimEnd().split('\n')
  expect(lines).toEqual([expect.stringMatching(/^info: mail written to the outbox \(mail_id \S+, transport outbox, message_id <\S+>, file \S+\.eml\)$/)])

  const ran = await run(['recipes', 'run', 'daily-report'], env)
  expect(ran.code).toBe(0)
  const ranLines = ran.stderr.trimEnd().split('\n')
  expect(ranLines.some((l) => l.startsWith('{'))).toBe(false)
  expect(ranLines).toContainEqual(expect.stringMatching(/^info: recipe run succeeded \(recipe daily-report, run_id \S+, trigger manual, dry_run false, summary \{"date":"\d{4}-\d{2}-\d{2}",.*\}\)$/))
})

it('a warning names its level and an error\'s message is shown, not its stack', async () => {
  const { humanLogLine } = await import('../../src/utils/human-log.ts')
  expect(humanLogLine({ level: 40, time: 1, msg: 'relay slow', host: 'smtp.example', attempts: 2 })).toBe('warn: relay slow (host smtp.example, attempts 2)\n')
  expect(humanLogLine({ level: 50, time: 1, msg: 'send failed', err: { type: 'Error', message: 'connect ECONNREFUSED', stack: 'Error: …\n    at x' } })).toBe('error: send failed (err connect ECONNREFUSED)\n')
  // Data from a webhook stays on its line.
  expect(humanLogLine({ level: 30, msg: 'campaign\nforged', name: 'a\u001b[31mb' })).toBe('info: campaign\\x0aforged (name a\\x1b[31mb)\n')
})
