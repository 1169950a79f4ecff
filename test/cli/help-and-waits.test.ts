import { withDatabase } from '../helpers/stored-data-dir.ts'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { main } from '../../src/cli.ts'
import { createManualClock } from '../../src/utils/clock.ts'
import { closedPort } from '../reports/smtp.ts'
import { childEnv, spawnCollecting } from './processes.ts'

async function run(argv: string[], env: Record<string, string> = {}, clock?: ReturnType<typeof createManualClock>) {
  let stdout = ''
  let stderr = ''
  const code = main(argv, { env, stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t), ...(clock ? { overrides: { clock } } : {}) })
  return { code: await code, stdout: () => stdout, stderr: () => stderr }
}

const dirs: string[] = []
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'sb-cli-'))
  dirs.push(d)
  return d
}

describe('sub-command help', () => {
  it('"recipes --help" and "events --help" list the group\'s commands (exit 0)', async () => {
    const recipes = await run(['recipes', '--help'])
    expect(recipes.code).toBe(0)
    expect(recipes.stdout()).toMatch(/^usage: switchboard recipes <command>/)
    expect(recipes.stdout()).toContain('recipes list')
    expect(recipes.stdout()).toContain('recipes run <name>')
    expect(recipes.stderr()).toBe('')
    const events = await run(['events', '--help'])
    expect(events.code).toBe(0)
    for (const c of ['events list', 'events show <id>', 'events replay <id>']) expect(events.stdout()).toContain(c)
  })

  it('a bare group lists its commands and exits 2 (an incomplete command); an unknown one names the known ones', async () => {
    const bare = await run(['events'])
    expect(bare.code).toBe(2)
    expect(bare.stdout()).toContain('events replay <id>')
    const unknown = await run(['events', 'frobnicate'])
    expect(unknown.code).toBe(2)
    expect(unknown.stderr()).toBe('error: unknown command "events frobnicate". events commands: list, show, replay.\n')
  })

  it('hints name the command as it was typed: "npm run -s cli --" from a checkout, "switchboard" as an installed bin', async () => {
    const fromCheckout = { npm_lifecycle_event: 'cli' }
    const unknown = await run(['frobnicate'], fromCheckout)
    expect(unknown.code).toBe(2)
    expect(unknown.stderr()).toBe('error: unknown command "frobnicate". Run "npm run -s cli -- help" for the list.\n')
    const badFlag = await run(['events', 'list', '--frobnicate'], fromCheckout)
    expect(badFlag.code).toBe(2)
    expect(badFlag.stderr()).toMatch(/Run "npm run -s cli -- events list --help"\.\n$/)
    // A value that starts with a dash: one line saying how to write it, with the hint.
    const dashValue = await run(['events', 'list', '--limit', '-3'], fromCheckout)
    expect(dashValue.code).toBe(2)
    expect(dashValue.stderr()).toBe('error: --limit takes a value, and the next word starts with a dash: write --limit=<value> for a value that starts with one. Run "npm run -s cli -- events list --help".\n')
    expect((await run(['events', '--help'], fromCheckout)).stdout()).toMatch(/^usage: npm run -s cli -- events <command>/)
    expect((await run(['events', 'show', '--help'], fromCheckout)).stdout()).toMatch(/^usage: npm run -s cli -- events show <id>/)
    // Installed as a package's bin (or run as `node src/bin.mjs`): the bin's name.
    expect((await run(['frobnicate'])).stderr()).toBe('error: unknown command "frobnicate". Run "switchboard help" for the list.\n')
    expect((await run(['events', '--help'])).stdout()).toMatch(/^usage: switchboard events <command>/)
  })

  it('a mistyped command or option gets the likely one suggested (exit 2); -h is --help', async () => {
    const expectMistake = async (argv: string[], message: string) => {
      const r = await run(argv, { npm_lifecycle_event: 'cli' })
      expect(r.code, argv.join(' ')).toBe(2)
      expect(r.stderr()).toBe(message)
    }
    await expectMistake(['evnts', 'list'], 'error: unknown command "evnts list" (did you mean "events list"?). Run "npm run -s cli -- help" for the list.\n')
    await expectMistake(['recipe', 'list'], 'error: unknown command "recipe list" (did you mean "recipes list"?). Run "npm run -s cli -- help" for the list.\n')
    await expectMistake(['events', 'lst'], 'error: unknown command "events lst" (did you mean "events list"?). events commands: list, show, replay.\n')
    await expectMistake(['events', 'list', '--limt', '5'], 'error: unknown option --limt for "events list" (did you mean --limit?). Run "npm run -s cli -- events list --help".\n')
    await expectMistake(['recipes', 'run', 'nightly-batch', '--dryrun'], 'error: unknown option --dryrun for "recipes run" (did you mean --dry-run?). Run "npm run -s cli -- recipes run --help".\n')
    await expectMistake(['events', 'list', '--frobnicate'], 'error: unknown option --frobnicate for "events list". Run "npm run -s cli -- events list --help".\n')
    const short = await run(['events', 'list', '-h'])
    expect(short.code).toBe(0)
    expect(short.stdout()).toMatch(/^usage: switchboard events list /)
  })

  it('the top-level help documents the exit codes', async () => {
    const help = await run(['--help'])
    expect(help.code).toBe(0)
    expect(help.stdout()).toContain('Exit codes: 0 done, 1 failed, 2 a mistake')
  })
})

describe('commands that wait', () => {
  it('a wait on the system clock keeps the process alive until it ends (no silent exit 13)', async () => {
    const script = "import { sleep, systemClock } from './src/utils/clock.ts'\nawait sleep(systemClock, 20)\nconsole.log('woke')\n"
    const spawned = spawnCollecting(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], childEnv({}))
    expect(await spawned.exited).toEqual({ code: 0, signal: null })
    expect(spawned.stdout()).toBe('woke\n')
  })

  it('report send with the SMTP relay down says in one line that the report is queued, and exits 0', async () => {
    const clock = createManualClock('2026-11-21T03:00:00Z')
    const port = await closedPort()
    const env = {
      DATA_DIR: await withDatabase(tempDir()),
      VOICE_API_KEY: 'sk_live_x',
      VOICE_API_BASE_URL: 'http://127.0.0.1:9',
      WEBHOOK_SECRET: 'whsec_x',
      SMTP_URL: `smtp://127.0.0.1:${port}`,
      REPORT_TO: 'ops@example.com',
      LOG_LEVEL: 'silent',
    }
    const result = await run(['report', 'send', '--date', '2026-11-20'], env, clock)
    // The outbox keeps it; the running service retries (test/faults/smtp-down.test.ts follows it to delivery).
    expect(result.code).toBe(0)
    expect(result.stdout().trimEnd().split('\n')).toEqual([expect.stringMatching(/^queued: .*ECONNREFUSED.*mail list/)])
  })
})
