import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadCommands } from '../../src/cli.ts'
import { startServer, type RunningServer } from '../../src/server.ts'
import { signFormant } from '../../src/webhooks/index.ts'
import { childEnv, ROOT, spawnCollecting } from './processes.ts'

// Every command in the README's CLI table, run through the real bin as a child process (where exit codes
// and an emptying event loop are real): each exits 0, 1 or 2 and ends with a line saying what happened.

const SECRET = 'whsec_readme_commands'
const EVENT_ID = 'evt_readme_0001'

/** The first column of the README's CLI table: "events replay <id> [--wait 15]" → "events replay". */
function readmeCommands(): string[] {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8')
  const table = readme.slice(readme.indexOf('| command | what it does |'))
  const rows = table.split('\n').slice(2)
  const names: string[] = []
  for (const row of rows) {
    if (!row.startsWith('|')) break
    const cell = /^\| `([^`]+)`/.exec(row)?.[1]
    if (cell) names.push(cell.split(/\s+[[<]/)[0]!.trim())
  }
  return names
}

let server: RunningServer
let dataDir: string
let env: Record<string, string | undefined>

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'sb-readme-'))
  // The service answers (sandbox upstream, receiver) but runs no background work, so a replayed event
  // stays queued: `events replay` then waits its --wait out on the real clock. Its backlog is never "behind" for doctor:
  // the stored event waits all along, and on a slow host this file outlasts the default 60 s (doctor then read
  // "degraded: the oldest unprocessed event is 69 s old" and exited 1).
  server = await startServer({ env: { DATA_DIR: dataDir, PORT: '0', WEBHOOK_SECRET: SECRET, LOG_LEVEL: 'silent', RECONCILE_INTERVAL_SECONDS: '0', BACKLOG_DEGRADED_SECONDS: '86400' }, background: false })
  const body = JSON.stringify({
    event_id: EVENT_ID,
    event_type: 'call.completed',
    timestamp: new Date().toISOString(),
    data: { call: { agent_id: 101, conversation_id: 'conv-readme_1', status: 'completed', to_phone: '+919876543210', call_parameters: { customer_phone: '+919876543210' } }, results: {} },
  })
  const res = await fetch(`${server.url}/webhooks/formant`, {
    method: 'POST',
    body,
    headers: { 'content-type': 'application/json', 'x-formantai-signature': signFormant(body, SECRET), 'x-formantai-timestamp': String(Math.floor(Date.now() / 1000)) },
  })
  expect(res.status).toBe(204)
  env = childEnv({ DATA_DIR: dataDir, PORT: String(server.port), WEBHOOK_SECRET: SECRET, RECONCILE_INTERVAL_SECONDS: '0' })
})

afterAll(async () => {
  await server?.close()
  rmSync(dataDir, { recursive: true, force: true })
})

const lastLine = (text: string) => text.trimEnd().split('\n').at(-1) ?? ''

async function runBin(args: string[], extraEnv: Record<string, string> = {}) {
  const spawned = spawnCollecting(process.execPath, ['src/bin.mjs', ...args], { ...env, ...extraEnv })
  const { code, signal } = await spawned.exited
  return { code, signal, stdout: spawned.stdout(), stderr: spawned.stderr() }
}

/** Long-running commands: started, stopped with SIGTERM once ready. */
async function runUntilReady(args: string[], ready: RegExp) {
  const spawned = spawnCollecting(process.execPath, ['src/bin.mjs', ...args], { ...env, PORT: '0' })
  await expect.poll(() => spawned.stdout(), { timeout: 30_000, interval: 100 }).toMatch(ready)
  spawned.child.kill('SIGTERM')
  const { code, signal } = await spawned.exited
  return { code, signal, stdout: spawned.stdout(), stderr: spawned.stderr() }
}

/** How each README command is exercised, and the final line it must end with. */
const CASES: Record<string, { run: () => ReturnType<typeof runBin>; code: number; last: RegExp }> = {
  serve: { run: () => runUntilReady(['serve'], /running at http/), code: 0, last: /^switchboard stopped$/ },
  sandbox: { run: () => runUntilReady(['sandbox', '--port', '0'], /listening at http/), code: 0, last: /^sandbox stopped$/ },
  migrate: { run: () => runBin(['migrate']), code: 0, last: /^database is up to date$/ },
  'events list': { run: () => runBin(['events', 'list']), code: 0, last: new RegExp(EVENT_ID) },
  'events show': { run: () => runBin(['events', 'show', EVENT_ID]), code: 0, last: /^}$/ },
  // Nothing processes it (no background work here): the command waits 1 s on the real clock, then says so.
  'events replay': { run: () => runBin(['events', 'replay', EVENT_ID, '--wait', '1']), code: 0, last: /queued; .*is switchboard running\?/ },
  reconcile: { run: () => runBin(['reconcile']), code: 0, last: /^listed \d+ conversation/ },
  'calls list': { run: () => runBin(['calls', 'list']), code: 0, last: /\S/ },
  'mail list': { run: () => runBin(['mail', 'list']), code: 0, last: /\S/ },
  'recipes list': { run: () => runBin(['recipes', 'list']), code: 0, last: /no-answer-followup/ },
  'recipes run': { run: () => runBin(['recipes', 'run', 'daily-report', '--dry-run']), code: 0, last: /\S/ },
  'recipes runs': { run: () => runBin(['recipes', 'runs', '--limit', '5']), code: 0, last: /daily-report|\(none\)/ },
  'recipes retry': { run: () => runBin(['recipes', 'retry', 'no-answer-followup']), code: 0, last: /^no-answer-followup: 0 events queued again; / },
  'recipes discard': { run: () => runBin(['recipes', 'discard', 'retired-recipe']), code: 2, last: /^$/ },
  'recipes check': { run: () => runBin(['recipes', 'check']), code: 0, last: /^\d+ recipes checked: no type errors$/ },
  'recipes test': { run: () => runBin(['recipes', 'test', 'no-answer-followup', '--events', 'data/samples/no-answer-events.json']), code: 0, last: /retry_context: / },
  // Written into a directory of its own, not the checkout's recipes/.
  'recipes new': {
    run: () => {
      const dir = join(dataDir, 'new-recipes')
      mkdirSync(dir, { recursive: true })
      return runBin(['recipes', 'new', 'my-followup'], { RECIPES_DIR: dir })
    },
    code: 0,
    last: /^reference: docs\/recipes\.md$/,
  },
  // No SMTP_URL, and the in-process service is up: every check is ok or skipped.
  doctor: { run: () => runBin(['doctor']), code: 0, last: /^doctor: no problems found( in what could be checked — the service is not running at \S+)?( \(\d checks? skipped, see above\))?$/ },
  // No DESTINATIONS configured: the listing says so; naming one that does not exist is a mistake (exit 2).
  'destinations list': { run: () => runBin(['destinations', 'list']), code: 0, last: /\S/ },
  'destinations test': { run: () => runBin(['destinations', 'test', 'crm']), code: 2, last: /^$/ },
  'destinations deliveries': { run: () => runBin(['destinations', 'deliveries']), code: 0, last: /\S/ },
  'destinations show': { run: () => runBin(['destinations', 'show', 'dlv_nope']), code: 2, last: /^$/ },
  'destinations replay': { run: () => runBin(['destinations', 'replay', 'dlv_nope']), code: 2, last: /^$/ },
  'destinations enable': { run: () => runBin(['destinations', 'enable', 'crm']), code: 2, last: /^$/ },
  'destinations discard': { run: () => runBin(['destinations', 'discard', 'crm']), code: 2, last: /^$/ },
  'report send': { run: () => runBin(['report', 'send', '--to', 'ops@example.com']), code: 0, last: /^ {2}file: {5}.*\.eml$/ },
}

describe("the README's CLI table, through the real bin", () => {
  const names = readmeCommands()

  it('lists every command the CLI has, and only commands this test knows how to run', async () => {
    const commands = await loadCommands()
    // A blank line inside the table once ended it early in rendered Markdown (and here): its last rows went unseen.
    expect(commands.map((c) => c.name).filter((n) => !names.includes(n))).toEqual([])
    expect(names.filter((n) => !(n in CASES))).toEqual([])
  })

  for (const name of readmeCommands()) {
    const c = CASES[name]
    if (!c) continue
    it(`${name}: exits ${c.code} with a final line`, { timeout: 60_000 }, async () => {
      const result = await c.run()
      expect(result.signal).toBeNull()
      expect([0, 1, 2]).toContain(result.code)
      // The whole output on a mismatch (doctor's lines say which check found what).
      expect(result.code, `${name} exited ${result.code}:\n${result.stdout}${result.stderr}`).toBe(c.code)
      expect(lastLine(result.stdout)).toMatch(c.last)
    })
  }

  it('an unknown event id is a mistake: exit 2 with one line', { timeout: 60_000 }, async () => {
    const replay = await runBin(['events', 'replay', 'evt_nope', '--wait', '1'])
    expect(replay).toMatchObject({ code: 2, stdout: '', stderr: 'error: no webhook event with id "evt_nope" (see: events list)\n' })
    const show = await runBin(['events', 'show', 'evt_nope'])
    expect(show.code).toBe(2)
  })
})
