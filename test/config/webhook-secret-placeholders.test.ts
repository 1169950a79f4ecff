import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/config/load.ts'
import { childEnv, spawnCollecting } from '../cli/processes.ts'

/**
 * A webhook secret is refused at start-up when it is a placeholder (on every scheme: `changeme`, `whsec_CHANGE_ME`,
 * `your-secret`, `xxx`…), and a Standard Webhooks secret when it is not whsec_ + strict base64 of at least 24 bytes —
 * the README's "whsec_ + base64 …; a placeholder is refused". An hmac target's raw secret may be any other string.
 */
const dir = mkdtempSync(join(tmpdir(), 'sb-secrets-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const key24 = `whsec_${randomBytes(24).toString('base64')}`
const key32 = `whsec_${randomBytes(32).toString('base64')}`

function problemOf(env: Record<string, string>): string | undefined {
  try {
    loadConfig({ env: { DATA_DIR: dir, ...env }, cwd: dir })
    return undefined
  } catch (error) {
    return (error as Error).message
  }
}
const target = (scheme: string, secret: string, extra: Record<string, string> = {}) => ({ WEBHOOK_TARGETS: JSON.stringify({ crm: { scheme, secrets: secret, ...extra } }) })
const hmac = (secret: string) => target('hmac', secret, { header: 'X-Signature' })

const PLACEHOLDERS = [
  'changeme', 'CHANGE_ME', 'change-me', 'placeholder', 'secret', 'SECRET', 'xxx', 'XXXXXXXX', 'your-secret', 'your_secret_here',
  'todo', 'TODO', 'example', 'replace-me', '<your-secret>', '…', 'undefined',
  'whsec_CHANGE_ME', 'whsec_changeme', 'whsec_xxx', 'whsec_placeholder', 'whsec_secret', 'whsec_your-secret',
]

describe('placeholders are refused on every scheme, naming the key', () => {
  it.each(PLACEHOLDERS)('%s', (secret) => {
    for (const [env, where] of [
      [target('standard', secret), 'WEBHOOK_TARGETS has a placeholder secret'],
      [hmac(secret), 'WEBHOOK_TARGETS has a placeholder secret'],
      [target('formant', secret), 'WEBHOOK_TARGETS has a placeholder secret'],
      [{ WEBHOOK_SECRET: secret }, 'WEBHOOK_SECRET has a placeholder secret'],
      [{ WEBHOOK_SECRET: `${key32},${secret}` }, 'WEBHOOK_SECRET has a placeholder secret'],
    ] as const) {
      const problem = problemOf(env)
      expect(problem, `${secret} ${JSON.stringify(env)}`).toMatch(new RegExp(`^Invalid configuration: ${where} .*: set the real one`))
    }
  })
})

describe('a Standard Webhooks secret is whsec_ + strict base64 of at least 24 bytes', () => {
  it.each([
    ['whsec_abc', 'not base64'],
    ['whsec_c2VjcmV0', 'fewer than 24 bytes'],
    [`whsec_${randomBytes(23).toString('base64')}`, 'fewer than 24 bytes'],
    [`whsec_${randomBytes(32).toString('base64url')}`, 'not base64'],
    [`whsec_${randomBytes(32).toString('base64').replace(/=+$/, '')}`, 'not base64'],
    [`whsec_${randomBytes(32).toString('base64')}==`, 'not base64'],
    ['whsec_%%%', 'not base64'],
    ['whsec_…', 'placeholder'],
    ['crm-secret', 'not base64'],
    [randomBytes(16).toString('base64'), 'fewer than 24 bytes'],
  ])('%s is refused (%s)', (secret, why) => {
    const problem = problemOf(target('standard', secret))
    expect(problem).toMatch(/^Invalid configuration: WEBHOOK_TARGETS .* at crm\.secrets$/)
    expect(problem).toContain(why)
  })

  it('24 to 64 bytes are taken, with the prefix or without', () => {
    for (const secret of [key24, key32, `whsec_${randomBytes(64).toString('base64')}`, randomBytes(32).toString('base64')]) {
      expect(problemOf(target('standard', secret)), secret).toBeUndefined()
    }
  })

  it('an hmac or formant secret is its text: any string that is not a placeholder', () => {
    for (const secret of ['gh-secret', 'my.crm.secret!', 's3cret', 'x', key32]) {
      expect(problemOf(hmac(secret)), secret).toBeUndefined()
      expect(problemOf(target('formant', secret)), secret).toBeUndefined()
      expect(problemOf({ WEBHOOK_SECRET: secret }), secret).toBeUndefined()
    }
  })
})

describe('the README example, through the real bin', () => {
  const configFile = join(dir, 'switchboard.config.ts')
  writeFileSync(
    configFile,
    `import { defineConfig } from 'switchboard'\n\nexport default defineConfig({\n  PORT: 8080,\n  RECIPES_TIMEZONE: 'Asia/Kolkata',\n  WEBHOOK_TARGETS: { crm: { scheme: 'standard', secrets: [process.env.CRM_WEBHOOK_SECRET ?? ''] } },\n})\n`,
  )
  const migrate = async (secret: string) => {
    const run = spawnCollecting(process.execPath, ['src/bin.mjs', 'migrate'], childEnv({ DATA_DIR: join(dir, 'data'), SWITCHBOARD_CONFIG: configFile, CRM_WEBHOOK_SECRET: secret }))
    const { code } = await run.exited
    return { code, stderr: run.stderr(), stdout: run.stdout() }
  }

  it('refuses a placeholder or a short key with one line naming WEBHOOK_TARGETS (exit 2), and takes a real secret', async () => {
    const refused = ['whsec_CHANGE_ME', 'whsec_xxx', 'whsec_placeholder', 'whsec_abc', 'changeme']
    const runs = await Promise.all([...refused, key32].map(migrate))
    for (const [i, secret] of refused.entries()) {
      const { code, stderr } = runs[i]!
      expect(code, secret).toBe(2)
      expect(stderr, secret).toMatch(/^error: Invalid configuration: WEBHOOK_TARGETS has a (placeholder secret|secret that is not base64)[^\n]* at crm\.secrets\n$/)
    }
    expect(runs.at(-1)!.stderr).toBe('')
    expect(runs.at(-1)!.code).toBe(0)
  })
})
