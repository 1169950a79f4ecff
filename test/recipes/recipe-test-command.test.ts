import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterAll, expect, it } from 'vitest'
import { main } from '../../src/cli.ts'
import { testRecipe, type PlannedEffect } from '../../src/index.ts'
import { shippedRecipesDir } from '../helpers/recipes.ts'
import { tempRecipesDir } from './helpers.ts'
import { withDatabase } from '../helpers/stored-data-dir.ts'
import { openStore } from '../../src/db/connect.ts'

/**
 * `recipes test` and `testRecipe()`: a dry run against fixture events or a CSV, on a frozen clock, in a
 * throw-away data folder. The provider address points nowhere: nothing may need it.
 */
const SAMPLES = resolve(import.meta.dirname, '../../data/samples')
const shipped = shippedRecipesDir('no-answer-followup', 'nightly-batch')
afterAll(() => shipped.cleanup())
const env = { RECIPES_DIR: shipped.dir, LOG_LEVEL: 'silent', VOICE_API_KEY: 'sk_test_acme', VOICE_API_BASE_URL: 'http://127.0.0.1:9', WEBHOOK_SECRET: 'whsec_x', DEFAULT_COUNTRY: 'IN', RECIPES_TIMEZONE: 'Asia/Kolkata' }

async function cli(...argv: string[]) {
  let out = ''
  let err = ''
  const code = await main(argv, { env, stdout: (t) => void (out += t), stderr: (t) => void (err += t) })
  return { code, out, err }
}

it('recipes test no-answer-followup --events sample.json prints the follow-up plan without a provider', async () => {
  const { code, out, err } = await cli('recipes', 'test', 'no-answer-followup', '--events', `${SAMPLES}/no-answer-events.json`)
  expect(err).toBe('')
  expect(code).toBe(0)
  expect(out).toMatch(/^recipe no-answer-followup: succeeded \(dry run on a frozen clock at 2026-01-15T10:01:05\.000Z/)
  // Ended 15:30 IST; no_answer waits an hour: 16:30 IST, inside the window.
  expect(out).toContain('call +919876543215 with agent 101 at 2026-01-15T11:00:00.000Z')
  expect(out).toContain('continues conv_sample_1')
  // Follow-ups of calls placed straight through the proxy count under "(direct)", as in the report.
  expect(out).toContain('· campaign (direct)')
  expect(out).not.toContain('agent:101')
  expect(out).toContain('retry_context: {"collected_data":{"name":"Meera","plan":"gold"}}')
  // The summary the recipe returned, as a line of its figures (its counts of 0 left out); --json keeps the value.
  expect(out).toMatch(/^summary: planned 2 · calls 2$/m)

  const json = await cli('recipes', 'test', 'no-answer-followup', '--events', `${SAMPLES}/no-answer-events.json`, '--now', '2026-01-15T15:50:00Z', '--json')
  const parsed = JSON.parse(json.out) as { now: string; plan: PlannedEffect[] }
  expect(parsed.now).toBe('2026-01-15T15:50:00.000Z')
  const call = parsed.plan.find((p): p is Extract<PlannedEffect, { kind: 'call' }> => p.kind === 'call')!
  // 21:20 IST: after the window closes, so the call moves to 09:00 IST the next day.
  expect(call.request.scheduled_for).toBe('2026-01-16T03:30:00.000Z')
  expect(call.request.retry_context).toBeTruthy()
})

it('recipes test nightly-batch --csv prints the batch with its rows and rejects', async () => {
  const { code, out } = await cli('recipes', 'test', 'nightly-batch', '--csv', `${SAMPLES}/leads.csv`, '--now', '2026-01-15T04:00:00Z')
  expect(code).toBe(0)
  expect(out).toMatch(/batch "leads-2026-01-15" for agent 101: \d+ rows?, \d+ rejected/)
  expect(out).toMatch(/rejected row \d+: /)
})

// The throw-away data folder had no do-not-call list: the plan listed numbers the service refuses (its `dnc.csv`, its
// `dnc` table), as if the list were empty.
it('recipes test checks numbers against the service\'s do-not-call list (its DATA_DIR\'s dnc.csv and its dnc table); testRecipe() does not', async () => {
  const dataDir = await withDatabase(mkdtempSync(join(tmpdir(), 'sb-test-dnc-')))
  try {
    writeFileSync(join(dataDir, 'dnc.csv'), '098765 43211\n')
    const store = await openStore(`sqlite:${join(dataDir, 'switchboard.db')}`)
    await store.db.insertInto('dnc').values({ phone: '+919876543212', reason: 'asked on a call', source: 'results', added_at: 0 }).execute()
    await store.close()
    const csv = join(dataDir, 'three.csv')
    writeFileSync(csv, 'name,phone\nA,9876543210\nB,9876543211\nC,9876543212\n')
    let out = ''
    const code = await main(['recipes', 'test', 'nightly-batch', '--csv', csv, '--now', '2026-01-15T04:00:00Z', '--json'], { env: { ...env, DATA_DIR: dataDir }, stdout: (t) => void (out += t), stderr: () => {} })
    expect(code).toBe(0)
    const batch = (JSON.parse(out) as { plan: PlannedEffect[] }).plan.find((p): p is Extract<PlannedEffect, { kind: 'batch' }> => p.kind === 'batch')!
    expect(batch.rows.map((r) => r.customer_phone)).toEqual(['+919876543210'])
    expect(batch.rejects.map((r) => [r.row, r.reason])).toEqual([[3, 'on the do-not-call list'], [4, 'on the do-not-call list']])
    // The service's database is as it was.
    expect(readFileSync(join(dataDir, 'dnc.csv'), 'utf8')).toBe('098765 43211\n')
    // A test of the team's recipes sees only what it sets up.
    const own = await testRecipe({ recipe: 'nightly-batch', csv, now: '2026-01-15T04:00:00Z', env: { ...env, DATA_DIR: dataDir } })
    const ownBatch = own.plan.find((p): p is Extract<PlannedEffect, { kind: 'batch' }> => p.kind === 'batch')!
    expect(ownBatch.rows).toHaveLength(3)
  } finally {
    rmSync(dataDir, { recursive: true, force: true })
  }
})

// The batch recipe leaves a file modified in the last minute for its next run (it may still be arriving): with the clock
// at "now" by default, the fresh copy `recipes test` made of the CSV was never read — an empty plan, exit 0.
it('recipes test nightly-batch --csv without --now plans the CSV it was given', async () => {
  const { code, out } = await cli('recipes', 'test', 'nightly-batch', '--csv', `${SAMPLES}/leads.csv`)
  expect(code).toBe(0)
  expect(out).not.toContain('modified_in_the_last_minute')
  // Read: launched, or held back for the calling window, depending on the hour the test runs at.
  expect(out).toMatch(/^summary: files 1 · batches 1$/m)
})

// `recipes test` ran with the environment alone: a switchboard.config.ts (DEFAULT_COUNTRY, RECIPES_TIMEZONE,
// WEBHOOK_TARGETS…) the service runs with was left out, so the test planned by other settings than the service's.
it('recipes test reads switchboard.config.ts as the service does', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'sb-recipe-config-'))
  const folder = tempRecipesDir()
  try {
    folder.write('zone', `import { defineRecipe } from 'switchboard'
export default defineRecipe({ description: 'says its zone and country', run: (ctx) => ({ zone: ctx.timezone, country: ctx.config.defaultCountry }) })
`)
    const config = join(dir, 'switchboard.config.ts')
    writeFileSync(config, `export default { RECIPES_TIMEZONE: 'America/New_York', DEFAULT_COUNTRY: 'US', RECIPES_TYPECHECK: false }\n`)
    const { RECIPES_TIMEZONE: _tz, DEFAULT_COUNTRY: _country, ...rest } = env
    let out = ''
    const code = await main(['recipes', 'test', 'zone', '--json'], { env: { ...rest, RECIPES_DIR: folder.dir, SWITCHBOARD_CONFIG: config }, stdout: (t) => void (out += t), stderr: (t) => void (out += t) })
    expect(out).toContain('"status": "succeeded"')
    expect(code).toBe(0)
    expect(JSON.parse(out)).toMatchObject({ summary: { zone: 'America/New_York', country: 'US' } })
  } finally {
    folder.cleanup()
    rmSync(dir, { recursive: true, force: true })
  }
})

it('without --events or --csv: a scheduled recipe runs as its tick at --now would (trigger cron), and says where sample inputs are', async () => {
  const { code, out } = await cli('recipes', 'test', 'no-answer-followup', '--now', '2026-01-15T04:00:00Z')
  expect(code).toBe(0)
  // The samples named so that they open from here (the tests run outside the checkout: in full).
  expect(out.split('\n')[1]).toBe(`note: no --events or --csv, so it ran as its scheduled tick at 2026-01-15T04:00:00.000Z would, over an empty database; samples: --events ${SAMPLES}/no-answer-events.json, --csv ${SAMPLES}/leads.csv`)
  expect(out).toContain('plan: nothing')
  const json = await cli('recipes', 'test', 'no-answer-followup', '--now', '2026-01-15T04:00:00Z', '--json')
  expect(JSON.parse(json.out)).toMatchObject({ trigger: 'cron', now: '2026-01-15T04:00:00.000Z' })
})

it('explains a mistake in one line', async () => {
  expect(await cli('recipes', 'test', 'nope', '--events', `${SAMPLES}/no-answer-events.json`)).toMatchObject({ code: 2, err: expect.stringMatching(/^error: no recipe named "nope"/) })
  expect(await cli('recipes', 'test', 'no-answer-followup', '--events', `${SAMPLES}/leads.csv`)).toMatchObject({ code: 2, err: expect.stringMatching(/^error: events file .*leads\.csv: /) })
})

it('testRecipe() runs an author’s recipe against inline events, for their own vitest tests', async () => {
  const folder = tempRecipesDir()
  try {
    folder.write(
      'thank-you',
      `import { defineRecipe } from 'switchboard'
export default defineRecipe({
  description: 'calls back interested customers the next morning',
  on: ['call.completed'],
  async run(ctx) {
    for (const e of ctx.trigger.events ?? []) {
      if (e.event.data.results?.intent !== 'interested') continue
      await ctx.campaigns.scheduleCall({ agentId: 101, phone: e.event.data.call.to_phone, scheduledFor: '2026-01-16T04:00:00Z', campaign: 'thank-you' })
    }
  },
})
`,
    )
    const event = (id: string, phone: string, intent: string) => ({
      event_id: id, event_type: 'call.completed' as const, timestamp: '2026-01-15T10:00:00Z',
      data: { call: { agent_id: 101, call_parameters: {}, conversation_id: `c_${id}`, duration_seconds: 40, started_at: null, ended_at: '2026-01-15T10:00:00Z', failure_reason: null, from_phone: null, to_phone: phone, recording_url: null, status: 'completed', trace_id: 't' }, results: { intent } },
    })
    const result = await testRecipe({ recipe: 'thank-you', recipesDir: folder.dir, env, events: [event('a', '09876543210', 'interested'), event('b', '+919876543211', 'not_interested')] })
    expect(result).toMatchObject({ status: 'succeeded', warnings: [] })
    expect(result.plan).toEqual([
      expect.objectContaining({ kind: 'call', campaign: 'thank-you', request: expect.objectContaining({ scheduled_for: '2026-01-16T04:00:00.000Z', parameters: [{ name: 'customer_phone', value: '+919876543210' }] }) }),
    ])
  } finally {
    folder.cleanup()
  }
})

it('a recipe that never ends is cut off at RECIPE_TIMEOUT_SECONDS, and one reading from an absent provider fails: both settle', async () => {
  const folder = tempRecipesDir()
  try {
    folder.write('hung', `import { defineRecipe } from 'switchboard'
export default defineRecipe({ description: 'never ends', run: () => new Promise(() => {}) })
`)
    folder.write('reader', `import { defineRecipe } from 'switchboard'
export default defineRecipe({ description: 'reads from the provider', async run(ctx) { return { total: (await ctx.client.listConversations({ limit: 1 })).total } } })
`)
    // The run's time limit is real time, whatever the frozen `now` says (1 s here).
    const limited = { ...env, RECIPE_TIMEOUT_SECONDS: '1', RECIPES_TYPECHECK: 'false' }
    expect(await testRecipe({ recipe: 'hung', recipesDir: folder.dir, env: limited })).toMatchObject({ status: 'failed', error: 'timed out after 1 s (RECIPE_TIMEOUT_SECONDS)' })
    const reader = await testRecipe({ recipe: 'reader', recipesDir: folder.dir, env: limited })
    expect(reader.status).toBe('failed')
  } finally {
    folder.cleanup()
  }
})

it('the CLI ends once it has printed, even when a recipe left a timer running', () => {
  const folder = tempRecipesDir()
  try {
    folder.write('leaves-interval', `import { defineRecipe } from 'switchboard'
export default defineRecipe({ description: 'leaves an interval behind', run: () => { setInterval(() => {}, 1_000); return { ok: true } } })
`)
    const bin = resolve(import.meta.dirname, '../../src/bin.mjs')
    const run = spawnSync(process.execPath, [bin, 'recipes', 'test', 'leaves-interval'], { env: { ...process.env, ...env, RECIPES_DIR: folder.dir, RECIPES_TYPECHECK: 'false' }, encoding: 'utf8', timeout: 30_000 })
    expect([run.signal, run.status]).toEqual([null, 0])
    expect(run.stdout).toMatch(/^recipe leaves-interval: succeeded/)
  } finally {
    folder.cleanup()
  }
}, 40_000)

it('reads an events file with a byte-order mark, and says in one line what is wrong with other inputs (exit 2)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'sb-recipe-inputs-'))
  try {
    const bom = join(dir, 'bom.json')
    writeFileSync(bom, `\uFEFF${readFileSync(`${SAMPLES}/no-answer-events.json`, 'utf8')}`)
    expect(await cli('recipes', 'test', 'no-answer-followup', '--events', bom)).toMatchObject({ code: 0, err: '' })
    const object = join(dir, 'object.json')
    writeFileSync(object, '{"foo":1}')
    // Named as typed on the command line: the flags, not testRecipe()'s options.
    expect(await cli('recipes', 'test', 'no-answer-followup', '--events', object)).toEqual({ code: 2, out: '', err: `error: --events ${object}: expected a JSON list of webhook events, or { "events": [ … ] }\n` })
    const oneBad = join(dir, 'one-bad.json')
    writeFileSync(oneBad, JSON.stringify([{ event_id: 'evt_1' }]))
    expect(await cli('recipes', 'test', 'no-answer-followup', '--events', oneBad)).toMatchObject({ code: 2, out: '', err: expect.stringMatching(new RegExp(`^error: --events ${oneBad}, event \\[0\\]: event \\[0\\]\\.event_type: `)) })
    expect(await cli('recipes', 'test', 'no-answer-followup', '--now', 'March 7')).toEqual({ code: 2, out: '', err: 'error: --now: "March 7" is not an ISO 8601 time with a zone, e.g. 2026-03-01T10:00:00+05:30\n' })
    expect(await cli('recipes', 'test', 'no-answer-followup', '--events', dir)).toEqual({ code: 2, out: '', err: `error: events file ${dir}: is a folder, not a file\n` })
    expect(await cli('recipes', 'test', 'nightly-batch', '--csv', dir)).toEqual({ code: 2, out: '', err: `error: --csv: ${dir} is a folder, not a CSV file\n` })
    // Text that is not JSON: the parser's words, whole on one line (its quote of the text held the file's line break).
    const notJson = join(dir, 'not.json')
    writeFileSync(notJson, 'not json\n')
    expect(await cli('recipes', 'test', 'no-answer-followup', '--events', notJson)).toEqual({ code: 2, out: '', err: `error: events file ${notJson}: Unexpected token 'o', "not json\\n" is not valid JSON\n` })
    // A CSV the recipe cannot use: its error names the author's file, not the test's copy of it.
    const noPhone = join(dir, 'no-phone.csv')
    writeFileSync(noPhone, 'name,city\nAsha,Pune\n')
    const folder = tempRecipesDir()
    try {
      folder.write('reads-inbox', `import { join } from 'node:path'
import { defineRecipe } from 'switchboard'
export default defineRecipe({ description: 'reads the inbox', async run(ctx) { await ctx.campaigns.prepareBatch(join(ctx.config.dataDir, 'inbox', 'no-phone.csv')) } })
`)
      const result = await testRecipe({ recipe: 'reads-inbox', recipesDir: folder.dir, csv: noPhone, env: { ...env, RECIPES_TYPECHECK: 'false' } })
      expect(result.status).toBe('failed')
      // At the run's `await` in the file as written (column 80; the loader's compiled line put it at 82).
      expect(result.error).toBe(`${noPhone} has no phone column: name one "customer_phone" (or phone, mobile, contact_number, msisdn); found: name, city (at ${folder.dir}/reads-inbox.ts:3:80)`)
    } finally {
      folder.cleanup()
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

it('an event whose results ask not to be called lists the number first, as processing does: no follow-up to it is planned', async () => {
  const event = (id: string, type: 'call.completed' | 'call.no_answer', endedAt: string, results: Record<string, unknown>) => ({
    event_id: id, event_type: type, timestamp: endedAt,
    data: {
      call: { agent_id: 101, call_parameters: { customer_phone: '+919876543212' }, conversation_id: `c_${id}`, duration_seconds: type === 'call.completed' ? 40 : null, started_at: null, ended_at: endedAt, failure_reason: type === 'call.completed' ? null : 'no_answer', from_phone: null, to_phone: '+919876543212', recording_url: null, status: type.slice(5), trace_id: `t_${id}` },
      results,
    },
  })
  const optedOut = event('optout', 'call.completed', '2026-01-15T05:00:00Z', { intent: "Don't call me again" })
  const missed = event('missed', 'call.no_answer', '2026-01-15T06:00:00Z', {})
  const quiet = { ...env, RECIPES_TYPECHECK: 'false' }
  const result = await testRecipe({ recipe: 'no-answer-followup', env: quiet, events: [optedOut, missed] })
  expect(result.status).toBe('succeeded')
  expect(result.plan.filter((p) => p.kind === 'call')).toEqual([])
  expect(result.warnings).toContain("optout's results ask not to be called: +919876543212 is on the test's do-not-call list, as the service lists it when it processes the event")
  // Without the opt-out, the same no-answer is followed up.
  const followed = await testRecipe({ recipe: 'no-answer-followup', env: quiet, events: [missed] })
  expect(followed.plan.filter((p) => p.kind === 'call')).toHaveLength(1)
})

it('shows what the run logged (ctx.log), in the result and in the printed test', async () => {
  const folder = tempRecipesDir()
  try {
    folder.write('says', `import { defineRecipe } from 'switchboard'
export default defineRecipe({ description: 'logs what it would do', run(ctx) { ctx.log.info({ event_id: 'evt_1' }, 'would forward'); ctx.log.debug('details'); ctx.log.warn('careful') } })
`)
    const logging = { ...env, LOG_LEVEL: 'info', RECIPES_TYPECHECK: 'false', RECIPES_DIR: folder.dir }
    const result = await testRecipe({ recipe: 'says', recipesDir: folder.dir, env: logging })
    expect(result.log).toEqual([{ level: 'info', msg: 'would forward', fields: { event_id: 'evt_1' } }, { level: 'warn', msg: 'careful' }])
    let out = ''
    expect(await main(['recipes', 'test', 'says'], { env: logging, stdout: (t) => void (out += t), stderr: () => {} })).toBe(0)
    expect(out).toContain('log info: would forward {"event_id":"evt_1"}\nlog warn: careful\n')
  } finally {
    folder.cleanup()
  }
})

it('keeps what the run logged at info whatever LOG_LEVEL the test runner set (the checkout\'s vitest sets silent: log was always empty); logLevel chooses', async () => {
  const folder = tempRecipesDir()
  try {
    folder.write('says', `import { defineRecipe } from 'switchboard'
export default defineRecipe({ description: 'logs what it would do', run(ctx) { ctx.log.info('would forward'); ctx.log.debug('details') } })
`)
    // As an author's test calls it: no env, so the process's — whose LOG_LEVEL is the runner's.
    expect(process.env.LOG_LEVEL).toBe('silent')
    expect((await testRecipe({ recipe: 'says', recipesDir: folder.dir })).log).toEqual([{ level: 'info', msg: 'would forward' }])
    const quiet = { ...env, RECIPES_TYPECHECK: 'false' }
    expect((await testRecipe({ recipe: 'says', recipesDir: folder.dir, env: quiet })).log).toEqual([])
    expect((await testRecipe({ recipe: 'says', recipesDir: folder.dir, env: quiet, logLevel: 'debug' })).log).toEqual([{ level: 'info', msg: 'would forward' }, { level: 'debug', msg: 'details' }])
    await expect(testRecipe({ recipe: 'says', recipesDir: folder.dir, env: quiet, logLevel: 'loud' as never })).rejects.toThrow(/logLevel/)
  } finally {
    folder.cleanup()
  }
})

it('the events given are stored as the service stores what it processed: ctx.data.events() finds them', async () => {
  const folder = tempRecipesDir()
  try {
    folder.write('reads', `import { defineRecipe } from 'switchboard'
export default defineRecipe({ description: 'reads stored events', on: ['call.no_answer', 'call.busy'], async run(ctx) {
  const events = await ctx.data.events({})
  return { events: events.length, processed: events.filter((e) => e.status === 'processed').length, conversations: (await ctx.data.conversations({})).length }
} })
`)
    const result = await testRecipe({ recipe: 'reads', recipesDir: folder.dir, events: `${SAMPLES}/no-answer-events.json`, env: { ...env, RECIPES_TYPECHECK: 'false' } })
    const count = (JSON.parse(readFileSync(`${SAMPLES}/no-answer-events.json`, 'utf8')) as unknown[]).length
    expect(result).toMatchObject({ status: 'succeeded', result: { events: count, processed: count } })
  } finally {
    folder.cleanup()
  }
})

it('a recipe on a named target\'s events is tested with them: { target, event_type, body } arrives as a TargetEvent', async () => {
  const folder = tempRecipesDir()
  const dir = mkdtempSync(join(tmpdir(), 'sb-recipe-target-'))
  try {
    folder.write('crm-sync', `import { defineRecipe } from 'switchboard'
export default defineRecipe({ description: 'reads CRM updates', on: ['crm:contact.updated'], run(ctx) {
  const events = ctx.trigger.events ?? []
  return { kinds: events.map((e) => e.kind).join(','), targets: events.map((e) => e.target).join(','), ids: events.map((e) => (e.body as { id: string }).id).join(',') }
} })
`)
    const file = join(dir, 'crm-events.json')
    writeFileSync(file, JSON.stringify([{ target: 'crm', event_type: 'contact.updated', body: { id: 'ct_1' } }, { target: 'crm', event_type: 'contact.updated', event_id: 'msg_2', body: { id: 'ct_2' } }]))
    // The target is configured, as the service needs it to run the recipe at all.
    const withCrm = { ...env, RECIPES_TYPECHECK: 'false', WEBHOOK_TARGETS: '{"crm":{"scheme":"standard","secrets":"whsec_Y3JtLXNlY3JldC1jcm0tc2VjcmV0LWNybS1zZWNyZXQ="}}' }
    const result = await testRecipe({ recipe: 'crm-sync', recipesDir: folder.dir, events: file, now: '2026-01-15T10:00:00Z', env: withCrm })
    expect(result).toMatchObject({ status: 'succeeded', warnings: [], result: { kinds: 'target,target', targets: 'crm,crm', ids: 'ct_1,ct_2' } })
    // Another type of the target, not listed in `on`, is warned about as provider types are.
    const other = await testRecipe({ recipe: 'crm-sync', recipesDir: folder.dir, events: [{ target: 'crm', event_type: 'deal.won', body: {} }], env: withCrm })
    expect(other.warnings).toEqual(['the recipe does not list crm:deal.won in `on` (it lists crm:contact.updated), so the service would not run it for these events: left out of its trigger (still stored)'])
    // ...and not run: the service would not run it for that event (its plan and summary held what it would never do).
    expect(other).toMatchObject({ status: 'not_run', result: null, plan: [] })
    // Given with events it does take, it gets those alone.
    const mixed = await testRecipe({ recipe: 'crm-sync', recipesDir: folder.dir, events: [{ target: 'crm', event_type: 'contact.updated', body: { id: 'ct_1' } }, { target: 'crm', event_type: 'deal.won', body: { id: 'dl_1' } }], env: withCrm })
    expect(mixed).toMatchObject({ status: 'succeeded', result: { kinds: 'target', ids: 'ct_1' } })
    // Without the target configured the service would never run it (broken, naming the target), and neither does the test.
    await expect(testRecipe({ recipe: 'crm-sync', recipesDir: folder.dir, events: file, env: { ...env, RECIPES_TYPECHECK: 'false' } })).rejects.toThrow(
      /recipe "crm-sync" is broken: `on` lists "crm:contact.updated", but no webhook target is named "crm"/,
    )
    // A mistake in one entry names it.
    const bad = await cli('recipes', 'test', 'crm-sync', '--events', file.replace('crm-events', 'bad'))
    expect(bad.code).toBe(2)
    writeFileSync(file, JSON.stringify([{ target: 'crm', body: {} }]))
    expect((await cli('recipes', 'test', 'no-answer-followup', '--events', file)).err).toMatch(/^error: --events .*crm-events\.json, event \[0\]: /)
  } finally {
    folder.cleanup()
    rmSync(dir, { recursive: true, force: true })
  }
})

it('recipes test and recipes check find a recipe the same way: by name, name.ts (in RECIPES_DIR) or a path', async () => {
  // name.ts names the recipe in RECIPES_DIR, wherever the command runs from (test read it as ./name.ts, check as the name).
  const byFile = await cli('recipes', 'test', 'no-answer-followup.ts', '--events', `${SAMPLES}/no-answer-events.json`)
  expect(byFile).toMatchObject({ code: 0, err: '' })
  expect(byFile.out).toMatch(/^recipe no-answer-followup: succeeded/)
  // A path is that file, also outside RECIPES_DIR (check took only its base name and looked in RECIPES_DIR).
  const other = tempRecipesDir()
  try {
    const path = other.write('elsewhere', `import { defineRecipe } from 'switchboard'\nexport default defineRecipe({ description: 'outside the folder', run: () => ({ ok: true }) })\n`)
    const checked = await cli('recipes', 'check', path)
    expect(checked).toMatchObject({ code: 0, err: '' })
    expect(checked.out).toContain('1 recipe checked: no type errors')
    expect(await cli('recipes', 'test', path)).toMatchObject({ code: 0, out: expect.stringMatching(/^recipe elsewhere: succeeded/) })
    // The same mistake reads the same from both.
    const missing = join(other.dir, 'nope.ts')
    expect(await cli('recipes', 'check', missing)).toMatchObject({ code: 2, err: `error: no recipe file at ${missing}\n` })
    expect(await cli('recipes', 'test', missing)).toMatchObject({ code: 2, err: `error: no recipe file at ${missing}\n` })
    expect((await cli('recipes', 'check', 'nope.ts')).err).toMatch(/^error: no recipe named "nope" in .* \(recipes: nightly-batch, no-answer-followup\)\n$/)
    expect((await cli('recipes', 'test', 'nope.ts')).err).toMatch(/^error: no recipe named "nope" in .* \(recipes: nightly-batch, no-answer-followup\)\n$/)
  } finally {
    other.cleanup()
  }
})

it('recipes test prints what a CSV carried with nothing that steers the terminal or forges a line', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'sb-csv-escape-'))
  try {
    const header = readFileSync(`${SAMPLES}/leads.csv`, 'utf8').split('\n')[0]!
    const columns = header.split(',')
    const cell = (name: string, value: string) => (columns.includes(name) ? value : '')
    // A row with a name carrying ESC, C1 CSI and a newline (a quoted cell), and a reject whose raw cells carry them too.
    const row = (phone: string) => columns.map((c) => (c === 'customer_phone' || c === 'phone' ? phone : c === 'name' ? '"Ann\u001b[2J\u009b31m\nplan: nothing"' : cell(c, ''))).join(',')
    writeFileSync(join(dir, 'leads.csv'), `${header}\n${row('+919876543215')}\n${row('not-a-phone\u001b]0;x\u0007')}\n`)
    const { code, out } = await cli('recipes', 'test', 'nightly-batch', '--csv', join(dir, 'leads.csv'), '--now', '2026-01-15T04:00:00Z')
    expect(code).toBe(0)
    expect(out).toMatch(/rejected row \d+: /)
    expect(out).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029]/)
    expect(out).not.toMatch(/^plan: nothing$/m)
    expect(out).toContain('Ann\\u001b[2J\\x9b31m')
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})
