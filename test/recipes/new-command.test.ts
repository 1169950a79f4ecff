import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, expect, it } from 'vitest'
import { main } from '../../src/cli.ts'
import { RECIPE_TEMPLATES } from '../../src/recipes/new-command.ts'
import { samplePath } from '../../src/recipes/sample-path.ts'
import { SHIPPED_RECIPES_DIR } from '../helpers/recipes.ts'

/** `recipes new` writes a recipe that passes `recipes check` and runs in `--dry-run` as it is. */
const dir = mkdtempSync(join(tmpdir(), 'sb-new-'))
const recipesDir = join(dir, 'recipes')
// A set RECIPES_DIR must exist (configuration refuses a missing one at start-up).
mkdirSync(recipesDir)
const env = {
  DATA_DIR: join(dir, 'data'), RECIPES_DIR: recipesDir, LOG_LEVEL: 'silent', REPORT_TO: 'ops@example.com',
  // Nothing may need the provider: this address refuses connections.
  VOICE_API_KEY: 'sk_test_acme', VOICE_API_BASE_URL: 'http://127.0.0.1:9', WEBHOOK_SECRET: 'whsec_x', UPSTREAM_TIMEOUT_MS: '1000',
  // `recipes check` below is the type check; the runs skip the service's own (same verdict, less CPU).
  RECIPES_TYPECHECK: 'false',
}
afterAll(() => rmSync(dir, { recursive: true, force: true }))

async function cli(...argv: string[]) {
  let out = ''
  let err = ''
  const code = await main(argv, { env, stdout: (t) => void (out += t), stderr: (t) => void (err += t) })
  return { code, out, err }
}

it('writes each template; all pass recipes check and run in --dry-run', async () => {
  for (const template of RECIPE_TEMPLATES) {
    const written = await cli('recipes', 'new', `my-${template}`, '--from', template)
    expect(written).toMatchObject({ code: 0, err: '' })
    expect(written.out).toContain(`my-${template}.ts (from the ${template} template)`)
    expect(readFileSync(join(recipesDir, `my-${template}.ts`), 'utf8')).toMatch(/^import .*\n/)
  }
  const check = await cli('recipes', 'check')
  expect(check).toMatchObject({ code: 0, out: `${RECIPE_TEMPLATES.length} recipes checked: no type errors\n` })
  for (const template of RECIPE_TEMPLATES) {
    const run = await cli('recipes', 'run', `my-${template}`, '--dry-run')
    expect(run.err).toBe('')
    expect(run.out).toMatch(new RegExp(`^recipe my-${template}: succeeded`))
  }
})

const ROOT = new URL('../..', import.meta.url).pathname

it('suggests, for each template, a recipes test with the sample its trigger needs — and that test shows it at work', async () => {
  const shown: Record<string, string> = {}
  for (const template of RECIPE_TEMPLATES) {
    const written = await cli('recipes', 'new', `try-${template}`, '--from', template)
    const hint = written.out.split('\n').find((line) => line.includes(`recipes test try-${template}`))!
    // Typed in the checkout, as the hint is meant: its sample paths are the checkout's (the tests run elsewhere).
    // Named so that the command line works where it was typed: the tests run outside the checkout, so in full.
    const args = hint.slice(hint.indexOf('recipes test')).split('#')[0]!.trim().split(/\s+/)
    for (const sample of args.filter((a) => a.includes('data/samples/'))) expect(existsSync(sample), sample).toBe(true)
    // At the default LOG_LEVEL, as a user runs it (this file's runs are silent otherwise).
    let out = ''
    let err = ''
    const code = await main(args, { env: { ...env, LOG_LEVEL: 'info' }, stdout: (t) => void (out += t), stderr: (t) => void (err += t) })
    const run = { code, out, err }
    expect([template, run.code, run.err]).toEqual([template, 0, ''])
    shown[template] = run.out
  }
  expect(shown.followup).toMatch(/^ {2}call \+9198765432\d\d with agent 101/m)
  expect(shown.batch).toMatch(/batch "leads-2026-01-15" for agent 101: \d+ rows/)
  expect(shown['webhook-forward']).toContain('log info: would forward')
  // Its summary says so: it read "nothing to report (every count 0)" beside the lines saying what it would forward.
  expect(shown['webhook-forward']).toMatch(/^summary: .*would_forward \d+/m)
})

it("each template's own comment names a sample file that is there", async () => {
  for (const template of RECIPE_TEMPLATES) {
    await cli('recipes', 'new', `see-${template}`, '--from', template)
    const source = readFileSync(join(recipesDir, `see-${template}.ts`), 'utf8')
    for (const [sample] of source.matchAll(/data\/samples\/[\w.-]+/g)) expect(existsSync(join(ROOT, sample)), `${template}: ${sample}`).toBe(true)
    expect(source, template).not.toMatch(/--events (?!data\/samples\/)/)
  }
})

it('refuses a bad name, an unknown template and an existing file, in one line', async () => {
  expect(await cli('recipes', 'new', 'bad name')).toMatchObject({ code: 2, err: expect.stringMatching(/^error: "bad name" cannot be a recipe name/) })
  // The reasons a name is refused, each as it is: a helper's "_" (never loaded as a recipe), a ".ts" given twice.
  expect(await cli('recipes', 'new', '_helper')).toMatchObject({ code: 2, err: 'error: "_helper" cannot be a recipe name: files starting with "_" are shared helpers, which are not loaded as recipes — start it with a letter or digit\n' })
  for (const name of ['.hidden', '../evil']) {
    expect(await cli('recipes', 'new', name)).toMatchObject({ code: 2, err: `error: "${name}" cannot be a recipe name: files starting with "." are hidden (and a name is no path: the file goes in RECIPES_DIR) — start it with a letter or digit\n` })
  }
  expect(await cli('recipes', 'new', 'Caps.ts')).toMatchObject({ code: 2, err: 'error: give the name without ".ts": recipes new Caps (it becomes Caps.ts)\n' })
  expect(await cli('recipes', 'new', 'x', '--from', 'nope')).toMatchObject({ code: 2, err: expect.stringMatching(/^error: --from must be one of followup, batch, report, webhook-forward/) })
  await cli('recipes', 'new', 'twice')
  expect(await cli('recipes', 'new', 'twice')).toMatchObject({ code: 2, err: expect.stringMatching(/already exists/) })
})

it('says when the new recipe runs on the same events as one already there (a copy of the follow-up runs beside it)', async () => {
  const own = join(dir, 'recipes-shared')
  mkdirSync(own)
  let out = ''
  const code = await main(['recipes', 'new', 'missed-calls', '--from', 'followup'], { env: { ...env, RECIPES_DIR: own }, stdout: (t) => void (out += t), stderr: () => {} })
  expect(code).toBe(0)
  expect(out).not.toContain('note:')
  let second = ''
  expect(await main(['recipes', 'new', 'second-try', '--from', 'followup'], { env: { ...env, RECIPES_DIR: own }, stdout: (t) => void (second += t), stderr: () => {} })).toBe(0)
  const lines = second.split('\n')
  expect(lines[0]).toMatch(new RegExp(`second-try\\.ts \\(from the followup template\\); a service started with RECIPES_DIR=${own} loads it at once and runs it on its events and schedule$`))
  expect(lines[1]).toBe('note: missed-calls also runs on call.no_answer, call.busy: both will run on each of them.')
  expect(lines[2]).toBe('  to have second-try replace it, move missed-calls.ts out of the recipes folder (or rename it to _missed-calls.ts: files starting with "_" are not loaded)')
  // A recipe on other events (or none) is not mentioned.
  let batch = ''
  expect(await main(['recipes', 'new', 'nightly', '--from', 'batch'], { env: { ...env, RECIPES_DIR: own }, stdout: (t) => void (batch += t), stderr: () => {} })).toBe(0)
  expect(batch).not.toContain('note:')
})

it('makes a RECIPES_DIR that does not exist yet, and says so (every other command still refuses a missing one)', async () => {
  const fresh = join(dir, 'team', 'recipes')
  let out = ''
  let err = ''
  const code = await main(['recipes', 'new', 'first'], { env: { ...env, RECIPES_DIR: fresh }, stdout: (t) => void (out += t), stderr: (t) => void (err += t) })
  expect({ code, err }).toEqual({ code: 0, err: '' })
  expect(out.split('\n')[0]).toBe(`created the recipes folder ${fresh}`)
  expect(readFileSync(join(fresh, 'first.ts'), 'utf8')).toContain("defineRecipe")
  err = ''
  const other = await main(['recipes', 'list'], { env: { ...env, RECIPES_DIR: join(dir, 'typo') }, stdout: () => {}, stderr: (t) => void (err += t) })
  expect(other).toBe(2)
  expect(err).toMatch(/RECIPES_DIR does not exist/)
})

it('names a sample relative to where the command runs inside the checkout, in full from anywhere else', () => {
  expect(samplePath('leads.csv', ROOT)).toBe('data/samples/leads.csv')
  expect(samplePath('leads.csv', SHIPPED_RECIPES_DIR)).toBe(join(ROOT, 'data/samples/leads.csv'))
  // A folder beside the checkout (tmpdir() itself may hold it: CI clones under /tmp, and from there the path is relative).
  const elsewhere = mkdtempSync(join(tmpdir(), 'sb-elsewhere-'))
  try {
    expect(samplePath('leads.csv', elsewhere)).toBe(join(ROOT, 'data/samples/leads.csv'))
    expect(existsSync(samplePath('no-answer-events.json', elsewhere))).toBe(true)
  } finally {
    rmSync(elsewhere, { recursive: true, force: true })
  }
})

// With RECIPES_DIR=/tmp/x, the hints left it out: `recipes run foo --dry-run`, typed as shown, looked in ./recipes and
// answered "no recipe named foo" (exit 2).
it('a recipe written to the folder RECIPES_DIR names: the hints carry RECIPES_DIR, and each works as typed', async () => {
  const own = join(dir, 'recipes elsewhere')
  let out = ''
  const code = await main(['recipes', 'new', 'foo', '--from', 'batch'], { env: { ...env, RECIPES_DIR: own }, stdout: (t) => void (out += t), stderr: () => {} })
  expect(code).toBe(0)
  const lines = out.split('\n')
  expect(lines).toContain(`wrote ${join(own, 'foo.ts')} (from the batch template); a service started with RECIPES_DIR='${own}' loads it at once and runs it on its events and schedule`)
  const hints = lines.slice(lines.indexOf('next:') + 1, lines.indexOf('reference: docs/recipes.md'))
  expect(hints).toHaveLength(3)
  for (const hint of hints) expect(hint.startsWith(`  RECIPES_DIR='${own}' switchboard recipes `), hint).toBe(true)
  // The dry run as the hint types it: its RECIPES_DIR, and nothing else of this test's.
  const dryRun = hints.find((h) => h.includes('--dry-run'))!
  const [, quoted, args] = /^ {2}RECIPES_DIR='([^']+)' switchboard (.+?)\s+#/.exec(dryRun)!
  const { RECIPES_DIR: _set, ...rest } = env
  let ran = ''
  let err = ''
  const run = await main(args!.split(/\s+/), { env: { ...rest, RECIPES_DIR: quoted! }, stdout: (t) => void (ran += t), stderr: (t) => void (err += t) })
  expect({ run, err }).toEqual({ run: 0, err: '' })
  expect(ran).toMatch(/^recipe foo: succeeded/)
})
