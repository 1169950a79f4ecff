import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/config/load.ts'
import { main } from '../../src/cli.ts'

// A destination URL that does not parse at all is a configuration mistake like any other: one line naming the
// destination and the field (exit 2), never the parser's bare "Invalid URL".

const SECRET = `whsec_${Buffer.alloc(32, 1).toString('base64')}`
const UNPARSABLE = ['crm.example.com/hooks', 'not a url', 'https://', 'http//x', '', 'https://exa mple.com/']
const LINE = 'Invalid configuration: DESTINATIONS destination "crm": url must be an http(s) URL'

const dirs: string[] = []
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'sb-dest-url-'))
  dirs.push(dir)
  return dir
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})

const destinationsEnv = (url: string) => JSON.stringify([{ name: 'crm', url, secret: SECRET }])

async function run(argv: string[], env: Record<string, string>) {
  let out = ''
  let err = ''
  const code = await main(argv, { env: { DATA_DIR: tempDir(), LOG_LEVEL: 'silent', ...env }, stdout: (t) => void (out += t), stderr: (t) => void (err += t) })
  return { code, out, err }
}

describe('a destination url that does not parse', () => {
  it('is named with its destination and field when the configuration loads', () => {
    for (const url of UNPARSABLE) {
      expect(() => loadConfig({ env: { DESTINATIONS: destinationsEnv(url) }, cwd: '/srv/app' }), JSON.stringify(url)).toThrow(LINE)
    }
  })

  it('stops serve with that line and exit 2, from the environment or from a config file', async () => {
    for (const url of UNPARSABLE) {
      expect(await run(['serve'], { PORT: '0', DESTINATIONS: destinationsEnv(url) }), JSON.stringify(url)).toEqual({ code: 2, out: '', err: `error: ${LINE}\n` })
    }
    const dir = tempDir()
    const file = join(dir, 'x.config.ts')
    writeFileSync(
      file,
      `import { defineConfig, defineDestination } from 'switchboard'\nexport default defineConfig({ DESTINATIONS: [defineDestination({ name: 'crm', url: 'crm.example.com/hooks', secret: ${JSON.stringify(SECRET)} })] })\n`,
    )
    expect(await run(['serve'], { PORT: '0', SWITCHBOARD_CONFIG: file })).toEqual({ code: 2, out: '', err: `error: ${LINE}\n` })
  })

  it('is a PROBLEM line in doctor, not a crash', async () => {
    const r = await run(['doctor'], { DESTINATIONS: destinationsEnv('http//x') })
    expect(r.err).not.toContain('Invalid URL')
    expect(r.out).toMatch(/^PROBLEM\s+configuration\s+DESTINATIONS destination "crm": url must be an http\(s\) URL → /m)
    expect(r.code).toBe(1)
  })
})
