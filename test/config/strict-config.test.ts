import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it } from 'vitest'
import { main } from '../../src/cli.ts'
import { loadConfig } from '../../src/config/load.ts'

// Start-up refuses each mistake with one line naming the key (exit 2), through the CLI.

const dirs: string[] = []
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'sb-strict-'))
  dirs.push(dir)
  return dir
}

async function startWith(env: Record<string, string>, configFile?: string) {
  const dir = tempDir()
  const extra: Record<string, string> = {}
  if (configFile !== undefined) {
    writeFileSync(join(dir, 'switchboard.config.ts'), configFile)
    extra.SWITCHBOARD_CONFIG = join(dir, 'switchboard.config.ts')
  }
  let stderr = ''
  let stdout = ''
  const code = await main(['migrate'], { env: { DATA_DIR: dir, LOG_LEVEL: 'silent', ...extra, ...env }, stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) })
  return { code, stderr, stdout, file: extra.SWITCHBOARD_CONFIG ?? '' }
}

const config = (body: string) => `import { defineConfig } from 'switchboard'\nexport default defineConfig(${body})\n`

describe('switchboard.config.ts is strict', () => {
  it.each([
    ['{ PROT: 8080 }', 'PROT', 'PORT'],
    ['{ port: 8080 }', 'port', 'PORT'],
    ["{ WEBHOOK_TARGET: { crm: { scheme: 'standard', secrets: 'whsec_c2VjcmV0' } } }", 'WEBHOOK_TARGET', 'WEBHOOK_TARGETS'],
  ])('%s → one line naming the key with a suggestion', async (body, key, guess) => {
    const r = await startWith({}, config(body))
    expect(r.code).toBe(2)
    expect(r.stdout).toBe('')
    expect(r.stderr).toBe(`error: Invalid configuration: ${key} is not a setting (in ${r.file}); did you mean ${guess}?\n`)
  })

  it('an unknown key with nothing close gets no guess', async () => {
    const r = await startWith({}, config('{ TOTALLY_UNRELATED_THING: 1 }'))
    expect(r.stderr).toBe(`error: Invalid configuration: TOTALLY_UNRELATED_THING is not a setting (in ${r.file})\n`)
  })

  it('a misspelled key inside a webhook target is refused too', async () => {
    const r = await startWith({}, config("{ WEBHOOK_TARGETS: { crm: { scheme: 'standard', secret: 'whsec_c2VjcmV0' } } }"))
    expect(r.code).toBe(2)
    expect(r.stderr).toBe('error: Invalid configuration: WEBHOOK_TARGETS at crm has an unknown key "secret" (did you mean "secrets"?)\n')
  })

  it('a webhook target without its scheme names the misspelled key, or the scheme it needs; a wrong scheme lists the right ones', async () => {
    const secret = "'whsec_c2VjcmV0c2VjcmV0c2VjcmV0'"
    const misspelled = await startWith({}, `export default { WEBHOOK_TARGETS: { crm: { schema: 'standard', secrets: ${secret} } } }\n`)
    expect([misspelled.code, misspelled.stderr]).toEqual([2, 'error: Invalid configuration: WEBHOOK_TARGETS at crm has an unknown key "schema" (did you mean "scheme"?)\n'])
    const none = await startWith({}, `export default { WEBHOOK_TARGETS: { crm: { secrets: ${secret} } } }\n`)
    expect(none.stderr).toBe('error: Invalid configuration: WEBHOOK_TARGETS at crm needs a scheme: one of formant, standard, hmac\n')
    const wrong = await startWith({ WEBHOOK_TARGETS: '{"crm":{"scheme":"stnadard"}}' })
    expect(wrong.stderr).toBe('error: Invalid configuration: WEBHOOK_TARGETS at crm scheme must be one of formant, standard, hmac (got "stnadard")\n')
  })

  it('a value of the wrong kind shows what it got; a choice lists the ones it takes', async () => {
    const level = await startWith({ LOG_LEVEL: 'verbose' })
    expect([level.code, level.stderr]).toEqual([2, 'error: Invalid configuration: LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent (got "verbose")\n'])
  })

  it('a file with no default export', async () => {
    const r = await startWith({}, "export const config = { PORT: 8080 }\n")
    expect(r.code).toBe(2)
    expect(r.stderr).toBe(`error: Invalid configuration: SWITCHBOARD_CONFIG ${r.file} has no default export: write export default defineConfig({ … })\n`)
  })

  it.each(['null', '5', "'PORT=8080'", '[]'])('a default export of %s is not a configuration object', async (value) => {
    const r = await startWith({}, `export default ${value}\n`)
    expect(r.code).toBe(2)
    expect(r.stderr).toBe(`error: Invalid configuration: SWITCHBOARD_CONFIG ${r.file} must export default defineConfig({ … }) (its default export is not an object)\n`)
  })

  it('a syntax error names file:line:col (columns counted from 1, as editors do)', async () => {
    const r = await startWith({}, "import { defineConfig } from 'switchboard'\nexport default defineConfig({ PORT: 8080 \n")
    expect(r.code).toBe(2)
    expect(r.stderr).toMatch(new RegExp(`^error: Invalid configuration: SWITCHBOARD_CONFIG could not load ${r.file.replace(/[.]/g, '\\.')}:3:1: Unexpected token`))
    expect(r.stderr.trim().split('\n')).toHaveLength(1)
    const comma = await startWith({}, "export default {\n  PORT: 8080,,\n}\n")
    expect(comma.stderr).toContain(`could not load ${comma.file}:2:14: Unexpected token`)
  })

  it('a file that throws names file:line, on line 1 too (where the loader\'s wrapper shifts every column)', async () => {
    const r = await startWith({}, "const x = 1\nthrow new Error('boom')\n")
    expect(r.stderr).toContain(`could not load ${r.file}:2: boom`)
    expect(r.stderr.trim().split('\n')).toHaveLength(1)
    const first = await startWith({}, "throw new Error('boom')\n")
    expect(first.stderr).toContain(`could not load ${first.file}:1: boom`)
  })
})

describe('values that look fine but are not', () => {
  it.each([
    [{ DEFAULT_COUNTRY: 'XX' }, 'error: Invalid configuration: DEFAULT_COUNTRY is not a country libphonenumber knows (use an ISO 3166 code such as IN, US, GB) (got "XX")\n'],
    [{ REPORT_TO: 'bob' }, 'error: Invalid configuration: REPORT_TO must be email addresses, comma-separated (got "bob")\n'],
    [{ REPORT_TO: 'ops@example.com, bob' }, 'error: Invalid configuration: REPORT_TO must be email addresses, comma-separated (got "bob")\n'],
    [{ WEBHOOK_SECRET: 'whsec_not*base64!' }, 'error: Invalid configuration: WEBHOOK_SECRET has a whsec_ secret that is not valid base64 (whsec_ is followed by the base64 of the key: the sender shows it, or make one with openssl rand -base64 32)\n'],
  ])('%o', async (env, line) => {
    const r = await startWith(env)
    expect(r.code).toBe(2)
    expect(r.stderr).toBe(line)
  })

  it.each([
    // Each once became 0 or 1 without a word: PORT 0 is a random port, a tolerance of 0 turns the timestamp check off.
    [{ PORT: ' ' }, undefined, 'error: Invalid configuration: PORT is blank (only spaces): leave it empty or unset for its default, or give it a value\n'],
    [{ PORT: '1e3' }, undefined, 'error: Invalid configuration: PORT must be a whole number in digits (got "1e3")\n'],
    [{ PORT: '0x50' }, undefined, 'error: Invalid configuration: PORT must be a whole number in digits (got "0x50")\n'],
    [{ WEBHOOK_TOLERANCE_SECONDS: '1.5' }, undefined, 'error: Invalid configuration: WEBHOOK_TOLERANCE_SECONDS must be a whole number (got "1.5")\n'],
    [{}, '{ PORT: null }', 'error: Invalid configuration: PORT must be a number (got null)\n'],
    [{}, "{ PORT: '' }", 'error: Invalid configuration: PORT must be a number (got "")\n'],
    [{}, '{ PORT: true }', 'error: Invalid configuration: PORT must be a number (got true)\n'],
    [{}, '{ WEBHOOK_TOLERANCE_SECONDS: null }', 'error: Invalid configuration: WEBHOOK_TOLERANCE_SECONDS must be a number (got null)\n'],
    [{}, '{ WEBHOOK_MAX_BYTES: [4096] }', 'error: Invalid configuration: WEBHOOK_MAX_BYTES must be a number\n'],
    [{}, '{ SANDBOX_SPEED: true }', 'error: Invalid configuration: SANDBOX_SPEED must be a number (got true)\n'],
    [{ SANDBOX_SPEED: 'fast' }, undefined, 'error: Invalid configuration: SANDBOX_SPEED must be a number (got "fast")\n'],
  ])('a whole number that is not one: %o %s', async (env, file, line) => {
    const r = await startWith(env, file === undefined ? undefined : config(file))
    expect(r.code).toBe(2)
    expect(r.stderr).toBe(line)
  })

  it.each([
    // Each was zod's own words: "Invalid input", "Too small: expected string to have >=1 characters".
    [{}, '{ WEBHOOK_SECRET: 12345 }', 'error: Invalid configuration: WEBHOOK_SECRET must be text (a comma-separated string) or a list of strings\n'],
    [{}, "{ RECIPES_DIR: '' }", 'error: Invalid configuration: RECIPES_DIR is blank: set a folder, e.g. ./recipes (got "")\n'],
    [{}, '{ SANDBOX_FAULTS: 5 }', 'error: Invalid configuration: SANDBOX_FAULTS must be fault=value pairs (a string such as "webhook_drop=0.05") or an object of numbers (got 5)\n'],
    // Number() read these as 16 and 1000.
    [{ SANDBOX_FAULTS: 'latency_ms=0x10' }, undefined, 'error: Invalid configuration: SANDBOX_FAULTS latency_ms must be a number from 0 to 60000 (got "latency_ms=0x10")\n'],
    [{ SANDBOX_FAULTS: 'latency_ms=1e3' }, undefined, 'error: Invalid configuration: SANDBOX_FAULTS latency_ms must be a number from 0 to 60000 (got "latency_ms=1e3")\n'],
    // Accepted, then never sendable back in an Authorization header; the token itself is never echoed.
    [{ ADMIN_TOKEN: 'correct horse battery staple' }, undefined, 'error: Invalid configuration: ADMIN_TOKEN must be printable ASCII without spaces (it is sent as a bearer token)\n'],
    [{ ADMIN_TOKEN: 'motdepassesécurisé' }, undefined, 'error: Invalid configuration: ADMIN_TOKEN must be printable ASCII without spaces (it is sent as a bearer token)\n'],
  ])('a value zod alone would word: %o %s', async (env, file, line) => {
    const r = await startWith(env, file === undefined ? undefined : config(file))
    expect(r.code).toBe(2)
    expect(r.stderr).toBe(line)
  })

  it('a whole number is a number or digits, spaces around them allowed', async () => {
    const dir = tempDir()
    const options = { cwd: dir, env: { DATA_DIR: dir } }
    expect(loadConfig({ ...options, env: { ...options.env, PORT: ' 8080 ', WEBHOOK_TOLERANCE_SECONDS: '0' } })).toMatchObject({ port: 8080, webhook: { toleranceSeconds: 0 } })
    expect(loadConfig({ ...options, file: { PORT: 8081, WEBHOOK_TOLERANCE_SECONDS: '60' } })).toMatchObject({ port: 8081, webhook: { toleranceSeconds: 60 } })
    expect(loadConfig({ ...options, env: { ...options.env, SANDBOX_SPEED: ' 0.5 ' } }).sandbox.speed).toBe(0.5)
    expect(loadConfig({ ...options, file: { SANDBOX_SPEED: 120 } }).sandbox.speed).toBe(120)
  })

  it('a whsec_ secret of a named target that is not base64', async () => {
    const r = await startWith({ WEBHOOK_TARGETS: JSON.stringify({ std: { scheme: 'standard', secrets: 'whsec_%%%' } }) })
    expect(r.stderr).toBe('error: Invalid configuration: WEBHOOK_TARGETS has a secret that is not base64: a Standard Webhooks secret is whsec_ followed by the base64 of the key (A–Z a–z 0–9 + /, = padding; the sender shows it, or make one with openssl rand -base64 32) at std.secrets\n')
  })

  // Without the prefix it was taken, and every delivery was then 401 "signature does not match": no key to try.
  it('a standard target\'s secret that is not base64 without its whsec_ prefix either', async () => {
    const r = await startWith({ WEBHOOK_TARGETS: JSON.stringify({ crm: { scheme: 'standard', secrets: 'my.crm.secret!' } }) })
    expect(r.code).toBe(2)
    expect(r.stderr).toBe('error: Invalid configuration: WEBHOOK_TARGETS has a secret that is not base64: a Standard Webhooks secret is whsec_ followed by the base64 of the key (A–Z a–z 0–9 + /, = padding; the sender shows it, or make one with openssl rand -base64 32) at crm.secrets\n')
    // Base64 without the prefix is the same key.
    expect((await startWith({ WEBHOOK_TARGETS: JSON.stringify({ crm: { scheme: 'standard', secrets: Buffer.from('crm-secret-crm-secret-crm-secret').toString('base64') } }), LOG_LEVEL: 'silent' })).stderr).not.toMatch(/WEBHOOK_TARGETS/)
  })

  it('RECIPES_DIR that does not exist, or is a file: one line, no stack, and what to do', async () => {
    const r = await startWith({ RECIPES_DIR: '/nonexistent/recipes' })
    expect(r.code).toBe(2)
    expect(r.stderr).toBe('error: Invalid configuration: RECIPES_DIR does not exist: /nonexistent/recipes (create the folder first, e.g. mkdir -p /nonexistent/recipes)\n')
    const file = await startWith({ RECIPES_DIR: fileURLToPath(import.meta.url) })
    expect(file.code).toBe(2)
    expect(file.stderr).toBe(`error: Invalid configuration: RECIPES_DIR is not a directory: ${fileURLToPath(import.meta.url)}\n`)
  })

  it('good values still pass: a real country, named recipients, a base64 whsec_ secret', async () => {
    const r = await startWith({ DEFAULT_COUNTRY: 'us', REPORT_TO: 'ops@example.com, Team <team@example.com>', WEBHOOK_SECRET: 'whsec_c2VjcmV0,plain-secret' })
    expect(r.stderr).toBe('')
    expect(r.code).toBe(0)
  })
})
