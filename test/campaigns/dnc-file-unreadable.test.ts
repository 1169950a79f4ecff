import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { blockedAmong, DncFileError, isBlocked, loadDncList } from '../../src/campaigns/dnc.ts'
import { createRecipeEngine, type RecipeEngine } from '../../src/recipes/engine.ts'
import { createApp } from '../../src/server.ts'
import { captureLogs } from '../helpers/log-capture.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { proxyHarness, type ProxyHarness } from '../proxy/helpers.ts'
import { shippedRecipesCopy } from '../helpers/recipes.ts'

// A DATA_DIR/dnc.csv that cannot be read stops every call — and says so: a directory made the nightly batch blame the
// inbox file ("could not process leads.csv (EISDIR…)") and POST /v1/call answer a bare 500 "see its logs".

const ZIP = Buffer.concat([Buffer.from([0x50, 0x4b, 0x03, 0x04, 0x14, 0x00, 0x06, 0x00]), Buffer.alloc(32, 0)])
const KEY = 'sk_live_dnc_file'

let rt: TestRuntime | undefined
let h: ProxyHarness | undefined
let engine: RecipeEngine | undefined
afterEach(async () => {
  await engine?.stop()
  await h?.close()
  await rt?.close()
  engine = h = rt = undefined
})

/** dnc.csv made a directory (`mkdir dnc.csv`, a mistaken unzip) or a workbook saved under the name. */
function spoil(dataDir: string, as: 'directory' | 'workbook'): string {
  const file = join(dataDir, 'dnc.csv')
  if (as === 'directory') mkdirSync(file)
  else writeFileSync(file, ZIP)
  return file
}

describe('the error names the file and why, in one sentence', () => {
  it('a directory', async () => {
    rt = await createTestRuntime({ env: { DEFAULT_COUNTRY: 'IN' } })
    const file = spoil(rt.dataDir, 'directory')
    const sentence = `the do-not-call file ${file} cannot be read: it is a directory, not a file`
    for (const read of [() => isBlocked(rt!, '+919876543210'), () => loadDncList(rt!), () => blockedAmong(rt!, ['+919876543210'])]) {
      const error = await read().catch((e: unknown) => e)
      expect(error).toBeInstanceOf(DncFileError)
      expect((error as DncFileError).message).toBe(sentence)
      expect((error as DncFileError).file).toBe(file)
    }
  })

  it('a workbook', async () => {
    rt = await createTestRuntime({ env: { DEFAULT_COUNTRY: 'IN' } })
    const file = spoil(rt.dataDir, 'workbook')
    const error = await isBlocked(rt, '+919876543210').catch((e: unknown) => e)
    expect(error).toBeInstanceOf(DncFileError)
    expect((error as Error).message).toMatch(new RegExp(`^the do-not-call file ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} is not a CSV file: it looks like a ZIP archive`))
  })
})

describe('POST /v1/call with a do-not-call file that cannot be read', () => {
  it.each(['directory', 'workbook'] as const)('dnc.csv a %s: 503 in the provider\'s error shape saying no call was placed, one log line naming the file', async (as) => {
    const logs = captureLogs('info')
    rt = await createTestRuntime({ log: logs.log, env: { DEFAULT_COUNTRY: 'IN', VOICE_API_KEY: KEY, VOICE_API_BASE_URL: 'http://127.0.0.1:9' } })
    const file = spoil(rt.dataDir, as)
    const res = await createApp(rt).fetch(
      new Request('http://localhost/v1/call', {
        method: 'POST',
        headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({ agent_id: 101, parameters: [{ name: 'customer_phone', value: '+919876543210' }] }),
      }),
    )
    expect(res.status).toBe(503)
    expect(await res.json()).toEqual({ error: { type: 'internal_error', message: 'switchboard cannot read its do-not-call file (dnc.csv), so no call was placed; see its logs' } })
    const lines = logs.lines.filter((l) => Number(l.level) >= 40)
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatchObject({ level: 50, file, msg: 'call refused: the do-not-call file cannot be read; no call is placed until it can' })
    expect(String(lines[0]!.err)).toContain(file)
    expect(lines[0]).not.toHaveProperty('stack')
    expect(await rt.store.db.selectFrom('calls').select('status').execute()).toEqual([])
  })
})

it('a nightly batch dry run names dnc.csv and the cause, not only the inbox file', async () => {
  h = await proxyHarness({ env: { RECIPES_DIR: shippedRecipesCopy(), RECIPES_TIMEZONE: 'Asia/Kolkata', DEFAULT_COUNTRY: 'IN' } })
  await h.clock.advanceTo(Date.parse('2026-03-19T05:30:00Z'))
  const inbox = join(h.rt.config.dataDir, 'inbox')
  mkdirSync(inbox, { recursive: true })
  writeFileSync(join(inbox, 'leads.csv'), 'phone,name\n9876543210,Asha\n')
  const file = spoil(h.rt.config.dataDir, 'directory')
  engine = createRecipeEngine(h.rt)
  await engine.reload()
  const dry = await engine.run('nightly-batch', { dryRun: true })
  expect(dry.status).toBe('failed')
  expect(dry.error).toContain(`the do-not-call file ${file} cannot be read: it is a directory, not a file`)
  expect(h.sandbox.stats().callsAccepted).toBe(0)
})
