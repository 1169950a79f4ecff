import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { resolveConfig } from '../../src/config/file.ts'
import { main } from '../../src/cli.ts'

const dirs: string[] = []
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'sb-cfg-'))
  dirs.push(dir)
  return dir
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})

describe('switchboard.config.ts', () => {
  it('is read from the working directory, typed with defineConfig from "switchboard", and the environment wins', async () => {
    const dir = tempDir()
    writeFileSync(
      join(dir, 'switchboard.config.ts'),
      `import { defineConfig } from 'switchboard'\nexport default defineConfig({ PORT: 4100, RECIPES_TIMEZONE: 'Europe/Berlin', WEBHOOK_TARGETS: { crm: { scheme: 'standard', secrets: ['whsec_Y3JtLXNlY3JldC1jcm0tc2VjcmV0LWNybS1zZWNyZXQ='] } } })\n`,
    )
    const config = await resolveConfig({ env: { RECIPES_TIMEZONE: 'UTC' }, cwd: dir })
    expect(config.port).toBe(4100)
    expect(config.recipes.timezone).toBe('UTC')
    expect(config.webhook.targets.crm).toEqual({ scheme: 'standard', secrets: ['whsec_Y3JtLXNlY3JldC1jcm0tc2VjcmV0LWNybS1zZWNyZXQ='] })
  })

  it('names a broken file in one line', async () => {
    const dir = tempDir()
    writeFileSync(join(dir, 'broken.config.ts'), 'export default {{{')
    await expect(resolveConfig({ env: { SWITCHBOARD_CONFIG: 'broken.config.ts' }, cwd: dir })).rejects.toThrow(/^Invalid configuration: SWITCHBOARD_CONFIG could not load .*broken\.config\.ts/)
    await expect(resolveConfig({ env: { SWITCHBOARD_CONFIG: 'missing.ts' }, cwd: dir })).rejects.toThrow(/does not exist/)
    // Only spaces, or a folder: said as such ("a file that does not exist: /dir/ ", "Cannot find module").
    await expect(resolveConfig({ env: { SWITCHBOARD_CONFIG: '  ' }, cwd: dir })).rejects.toThrow(/^Invalid configuration: SWITCHBOARD_CONFIG is blank \(only spaces\)/)
    await expect(resolveConfig({ env: { SWITCHBOARD_CONFIG: '.' }, cwd: dir })).rejects.toThrow(`Invalid configuration: SWITCHBOARD_CONFIG names a folder, not a file: ${dir} (name the config file itself, e.g. ${join(dir, 'switchboard.config.ts')})`)
    // Found in the working directory, with SWITCHBOARD_CONFIG never set: the message names the file, not the variable.
    writeFileSync(join(dir, 'switchboard.config.ts'), 'export default {\n  PORT: 8080,,\n}\n')
    await expect(resolveConfig({ env: {}, cwd: dir })).rejects.toThrow(`Invalid configuration: switchboard.config.ts could not load ${join(dir, 'switchboard.config.ts')}:2:14: Unexpected token`)
  })
})

describe('CLI errors', () => {
  const capture = async (argv: string[], env: Record<string, string> = {}) => {
    let out = ''
    let err = ''
    const code = await main(argv, { env, stdout: (t) => void (out += t), stderr: (t) => void (err += t) })
    return { code, out, err }
  }

  it('prints one line and exits non-zero for an unknown command, a bad flag, or bad configuration', async () => {
    const unknown = await capture(['frobnicate'])
    expect(unknown.code).toBe(2)
    expect(unknown.err).toMatch(/^error: unknown command "frobnicate"/)
    expect(unknown.err.trim().split('\n')).toHaveLength(1)

    const badFlag = await capture(['migrate', '--nope'])
    expect(badFlag.code).toBe(2)
    expect(badFlag.err).toMatch(/^error: .*--nope/)

    const badEnv = await capture(['migrate'], { PORT: 'x' })
    expect(badEnv.code).toBe(2)
    expect(badEnv.err).toBe('error: Invalid configuration: PORT must be a number (got "x")\n')
  })

  it('migrates a fresh database and reports it as JSON', async () => {
    const dir = tempDir()
    const first = await capture(['migrate', '--json'], { DATA_DIR: dir })
    expect(first.code).toBe(0)
    expect(JSON.parse(first.out)).toMatchObject({ database: 'sqlite' })
    expect(JSON.parse(first.out).applied).toContain('0001_initial')
    const again = await capture(['migrate'], { DATA_DIR: dir })
    expect(again.out).toBe('database is up to date\n')
  })
})
