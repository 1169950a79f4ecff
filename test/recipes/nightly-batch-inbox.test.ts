import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { afterEach, expect, it } from 'vitest'
import { createRecipeEngine, type RecipeEngine } from '../../src/recipes/engine.ts'
import { proxyHarness, type ProxyHarness } from '../proxy/helpers.ts'

/**
 * The shipped nightly-batch recipe over an inbox holding what people actually drop there: a workbook, an
 * image renamed .csv, a Latin-1 export and a file still being copied. Its provider is the sandbox.
 */
const SHIPPED = resolve(import.meta.dirname, '../../recipes')

interface Outcome { file: string; batch_id: number | null; rows: number; moved_to: string | null; warnings?: string[]; error?: string }

let h: ProxyHarness | undefined
let engine: RecipeEngine | undefined
afterEach(async () => {
  await engine?.stop()
  await h?.close()
  engine = h = undefined
})

it('parks binary and non-CSV files in failed/ with a one-line reason, transcodes Latin-1 with a warning, and the next night is clean', async () => {
  h = await proxyHarness({ env: { RECIPES_DIR: SHIPPED, RECIPES_TIMEZONE: 'Asia/Kolkata' } })
  const inbox = join(h.rt.config.dataDir, 'inbox')
  mkdirSync(inbox, { recursive: true })
  writeFileSync(join(inbox, 'leads.xlsx'), Buffer.concat([Buffer.from('PK\x03\x04'), Buffer.alloc(64, 0)]))
  writeFileSync(join(inbox, 'photo.csv'), Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.from('\x00\x00\x1b[2J\x07binary')]))
  writeFileSync(join(inbox, 'clientes.csv'), Buffer.from('telefono,phone,name\nx,9876543210,José Núñez\ny,9876543211,Zoë\n', 'latin1'))
  writeFileSync(join(inbox, 'half-copied.csv.part'), 'phone\n98765')

  engine = createRecipeEngine(h.rt)
  await engine.reload()
  const dry = await engine.run('nightly-batch', { dryRun: true })
  expect(dry.status).toBe('succeeded')
  expect(readdirSync(inbox).sort()).toEqual(['clientes.csv', 'half-copied.csv.part', 'leads.xlsx', 'photo.csv'])
  expect(dry.plan.find((p) => p.kind === 'batch')).toMatchObject({ rows: [{ customer_phone: '+919876543210', name: 'José Núñez' }, { customer_phone: '+919876543211', name: 'Zoë' }] })

  const run = await engine.run('nightly-batch')
  expect(run.status).toBe('succeeded')
  const { batches } = run.result as { batches: Outcome[] }
  const byFile = Object.fromEntries(batches.map((b) => [b.file, b]))
  expect(Object.keys(byFile).sort()).toEqual(['clientes.csv', 'leads.xlsx', 'photo.csv'])

  // Latin-1: launched, names intact, and the run summary says the file was transcoded.
  expect(byFile['clientes.csv']).toMatchObject({ rows: 2, batch_id: expect.any(Number) })
  expect(byFile['clientes.csv']!.warnings).toEqual([expect.stringMatching(/^clientes\.csv is not UTF-8: 4 bytes were read as Windows-1252 \(Latin-1\), the first in "José Núñez"/)])

  // Binary and non-CSV: parked with their reason beside them, one printable line each.
  expect(readdirSync(inbox).sort()).toEqual(['done', 'failed', 'half-copied.csv.part'])
  expect(readdirSync(join(inbox, 'failed')).sort()).toEqual(['leads.xlsx', 'leads.xlsx.error.txt', 'photo.csv', 'photo.csv.error.txt'])
  const reasons = ['photo.csv', 'leads.xlsx'].map((f) => readFileSync(join(inbox, 'failed', `${f}.error.txt`), 'utf8'))
  expect(reasons[0]).toBe('photo.csv is not a CSV file: it looks like a PNG image; export it as "CSV UTF-8" and drop that file in instead\n')
  expect(reasons[1]).toMatch(/^leads\.xlsx is not a CSV file \(the inbox reads \*\.csv only\)/)
  for (const reason of reasons) expect(reason).toMatch(/^[\x20-\x7e]+\n$/)
  for (const b of [byFile['photo.csv']!, byFile['leads.xlsx']!]) {
    expect(b.moved_to).toMatch(/[/\\]failed[/\\]/)
    expect(b.error).toMatch(/^[\x20-\x7e]+$/)
  }
  expect(readdirSync(join(inbox, 'done')).sort()).toEqual(['clientes.csv', 'clientes.rejects.csv'])

  // The next night finds nothing to fail on.
  const next = await engine.run('nightly-batch')
  expect(next.status).toBe('succeeded')
  expect((next.result as { files: number }).files).toBe(0)
  expect(existsSync(join(inbox, 'half-copied.csv.part'))).toBe(true)
})
