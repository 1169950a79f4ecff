import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { ConfigError, loadConfig } from '../../src/config/load.ts'

const load = (env: Record<string, string>) => loadConfig({ env, cwd: '/srv/app' })

describe('configuration', () => {
  it('has working defaults: sandbox mode, SQLite under ./data, port 3000 on loopback', () => {
    const c = load({})
    expect(c.sandboxMode).toBe(true)
    expect(c.port).toBe(3000)
    expect(c.host).toBe('127.0.0.1')
    expect(c.dataDir).toBe('/srv/app/data')
    expect(c.databaseUrl).toBe('sqlite:/srv/app/data/switchboard.db')
    expect(c.upstreamBaseUrl).toBe('http://127.0.0.1:3000/sandbox')
    expect(c.webhook).toMatchObject({ toleranceSeconds: 300, maxBytes: 1_048_576, allowUnsigned: false })
    expect(c.recipes.timezone).toBe('Asia/Kolkata')
    expect(c.defaultCountry).toBe('IN')
    expect(c.sandbox).toMatchObject({ speed: 60, rateLimit: 600, numberLimit: 3, maxCalls: 10 })
  })

  it('picks the region address, and an explicit URL wins', () => {
    expect(load({ VOICE_API_KEY: 'k', WEBHOOK_SECRET: 's' }).upstreamBaseUrl).toBe('https://api.voice.formantai.com')
    expect(load({ VOICE_API_KEY: 'k', WEBHOOK_SECRET: 's', VOICE_API_REGION: 'india' }).upstreamBaseUrl).toBe('https://api.in.voice.formantai.com')
    expect(
      load({ VOICE_API_KEY: 'k', WEBHOOK_SECRET: 's', VOICE_API_REGION: 'india', VOICE_API_BASE_URL: 'http://127.0.0.1:9/v1/' }).upstreamBaseUrl,
    ).toBe('http://127.0.0.1:9')
  })

  it('points the sandbox upstream at an address this machine can connect to, an IPv6 one bracketed', () => {
    expect(load({ HOST: '::' }).upstreamBaseUrl).toBe('http://127.0.0.1:3000/sandbox')
    expect(load({ HOST: '0.0.0.0' }).upstreamBaseUrl).toBe('http://127.0.0.1:3000/sandbox')
    expect(load({ HOST: '::1', PORT: '4000' }).upstreamBaseUrl).toBe('http://[::1]:4000/sandbox')
    expect(load({ HOST: 'fd00::5' }).upstreamBaseUrl).toBe('http://[fd00::5]:3000/sandbox')
    expect(load({ HOST: '10.0.0.5' }).upstreamBaseUrl).toBe('http://10.0.0.5:3000/sandbox')
  })

  it('splits rotated secrets and recipients on commas', () => {
    const c = load({ WEBHOOK_SECRET: ' old , new ', REPORT_TO: 'a@x.test,b@x.test' })
    expect(c.webhook.secrets).toEqual(['old', 'new'])
    expect(c.mail.reportTo).toEqual(['a@x.test', 'b@x.test'])
  })

  it('reads REPORT_TO as address lists: a comma inside a quoted display name does not split it', () => {
    expect(load({ REPORT_TO: '"Doe, John" <j@x.test>, Ops <ops@x.test>,c@x.test' }).mail.reportTo).toEqual(['"Doe, John" <j@x.test>', '"Ops" <ops@x.test>', 'c@x.test'])
    expect(() => load({ REPORT_TO: '"Doe, John" <j@x.test>, bob' })).toThrow(/REPORT_TO/)
    // Internationalised addresses, as ctx.mail.send takes them.
    expect(load({ REPORT_TO: 'ops@bücher.example, Jörg <jörg@example.com>' }).mail.reportTo).toEqual(['ops@bücher.example', '"Jörg" <jörg@example.com>'])
    for (const bad of ['ops@bücher', 'jörg@', '@bücher.example', 'ops@b..example', 'jörg ops@bücher.example']) expect(() => load({ REPORT_TO: bad })).toThrow(/REPORT_TO/)
  })

  it('parses SANDBOX_FAULTS', () => {
    expect(load({ SANDBOX_FAULTS: 'webhook_duplicate=0.1,webhook_drop=0.05,upstream_500=0.02,upstream_500_after=0.01' }).sandbox.faults).toEqual({
      webhookDuplicate: 0.1, webhookDrop: 0.05, webhookReorder: 0, upstream500: 0.02, upstream500After: 0.01, latencyMs: 0,
    })
  })

  it.each([
    [{ PORT: 'abc' }, /^Invalid configuration: PORT must be a number/],
    [{ PORT: '70000' }, /^Invalid configuration: PORT must be at most 65535/],
    [{ WEBHOOK_TOLERANCE_SECONDS: '-1' }, /^Invalid configuration: WEBHOOK_TOLERANCE_SECONDS must be at least 0/],
    [{ RECIPES_TIMEZONE: 'Mars/Base' }, /^Invalid configuration: RECIPES_TIMEZONE must be an IANA time zone/],
    [{ RECIPES_TIMEZONE: 'EST' }, /^Invalid configuration: RECIPES_TIMEZONE is an abbreviation Intl reads as America\/Panama's time, not America\/New_York's: name the zone, e\.g\. America\/New_York/],
    [{ DATABASE_URL: 'mysql://x' }, /^Invalid configuration: DATABASE_URL must start with sqlite: or postgres:\/\//],
    [{ SANDBOX_FAULTS: 'meteor=1' }, /^Invalid configuration: SANDBOX_FAULTS unknown fault "meteor"/],
    [{ SANDBOX_FAULTS: 'webhook_drop=2' }, /^Invalid configuration: SANDBOX_FAULTS webhook_drop must be a number from 0 to 1/],
    [{ SANDBOX_FAULTS: 'webhook_drop' }, /^Invalid configuration: SANDBOX_FAULTS entry "webhook_drop" must be fault=value, e\.g\. webhook_drop=0\.05/],
    [{ SANDBOX_FAULTS: 'webhook_duplicate=0.1,webhook_drop=' }, /^Invalid configuration: SANDBOX_FAULTS entry "webhook_drop=" must be fault=value/],
    [{ SANDBOX_FAULTS: 'webhook_drop= ,upstream_500=0.1' }, /^Invalid configuration: SANDBOX_FAULTS entry "webhook_drop=" must be fault=value/],
    [{ SANDBOX_FAULTS: 'webhook_drop=0.1=0.2' }, /^Invalid configuration: SANDBOX_FAULTS entry "webhook_drop=0\.1=0\.2" must be fault=value/],
    [{ VOICE_API_REGION: 'mars' }, /^Invalid configuration: VOICE_API_REGION/],
    [{ VOICE_API_KEY: 'k' }, /^Invalid configuration: WEBHOOK_SECRET is required when VOICE_API_KEY is set/],
    [{ WEBHOOK_TARGETS: '{"crm":{"scheme":"standard"}}' }, /^Invalid configuration: WEBHOOK_TARGETS target "crm" has no secret/],
    [{ WEBHOOK_TARGETS: 'not json' }, /^Invalid configuration: WEBHOOK_TARGETS must be a JSON object/],
    [{ WEBHOOK_TARGETS: '{"gh":{"scheme":"hmac","secrets":"s"}}' }, /^Invalid configuration: WEBHOOK_TARGETS is required for scheme "hmac": the header that carries the signature, e\.g\. X-Hub-Signature-256 at gh\.header/],
    [
      { WEBHOOK_TARGETS: '{"svix":{"scheme":"hmac","secrets":"s","header":"X-Sig","prefix":"v1,"}}' },
      /^Invalid configuration: WEBHOOK_TARGETS must not contain a comma or a space: they separate signatures in the header \(for "v1,<base64>" signatures use scheme "standard"\) at svix\.prefix$/,
    ],
    [{ DEFAULT_COUNTRY: 'India' }, /^Invalid configuration: DEFAULT_COUNTRY must be a two-letter country code/],
    // No scheme, or nothing after it: the one line, not "Invalid URL" from a check that ran anyway (exit 1).
    [{ VOICE_API_BASE_URL: 'api.voice.example.com' }, /^Invalid configuration: VOICE_API_BASE_URL must be an http\(s\) URL/],
    [{ VOICE_API_BASE_URL: 'http://' }, /^Invalid configuration: VOICE_API_BASE_URL must be an http\(s\) URL/],
    [{ VOICE_API_BASE_URL: 'https://127.0.0.1:1/v1?key=x' }, /^Invalid configuration: VOICE_API_BASE_URL must be a plain http\(s\) base URL, without credentials, a query or a fragment \(got "https:\/\/127\.0\.0\.1:1\/…\?…"\)$/],
    [{ VOICE_API_KEY: '   ' }, /^Invalid configuration: VOICE_API_KEY is blank/],
    [{ HOST: '  ' }, /^Invalid configuration: HOST is blank/],
    [{ DATA_DIR: ' ' }, /^Invalid configuration: DATA_DIR is blank/],
    // Lists and JSON settings dropped the blanks and took these as unset, without a word.
    [{ SANDBOX_FAULTS: 'webhook_drop=0.1, webhook_drop=0.2' }, /^Invalid configuration: SANDBOX_FAULTS webhook_drop is given twice: keep one entry \(got "webhook_drop=0.1, webhook_drop=0.2"\)$/],
    [{ SANDBOX_FAULTS: ' ' }, /^Invalid configuration: SANDBOX_FAULTS is blank \(only spaces\): leave it empty or unset for its default, or give it a value$/],
    [{ REPORT_TO: '  ' }, /^Invalid configuration: REPORT_TO is blank \(only spaces\)/],
    [{ DESTINATIONS: ' ' }, /^Invalid configuration: DESTINATIONS is blank \(only spaces\)/],
    [{ WEBHOOK_TARGETS: '\t' }, /^Invalid configuration: WEBHOOK_TARGETS is blank \(only spaces\)/],
    [{ WEBHOOK_SECRET: ' ' }, /^Invalid configuration: WEBHOOK_SECRET is blank \(only spaces\)/],
    [{ DATABASE_URL: 'sqlite:' }, /^Invalid configuration: DATABASE_URL names no file/],
    // node-postgres reads neither: every table went to "public" without a word.
    [{ DATABASE_URL: 'postgres://db/app?search_path=tenant_a' }, /^Invalid configuration: DATABASE_URL has \?search_path=, which the Postgres driver ignores \(the tables would go to "public"\): pick the schema with \?options=-c%20search_path%3Dtenant_a/],
    [{ DATABASE_URL: 'postgres://db/app?sslmode=require&schema=tenant_a' }, /^Invalid configuration: DATABASE_URL has \?schema=, which the Postgres driver ignores/],
    // What the driver's own parser refuses stopped the service later with a bare "Invalid URL": named here, the value
    // hidden but for its host (it holds the password).
    [{ DATABASE_URL: 'postgres://app:pa#ss@127.0.0.1:5432/app' }, /^Invalid configuration: DATABASE_URL is not a URL the Postgres driver can read: percent-encode any @ : \/ \? # or space in the user name and password \(# as %23, \/ as %2F\), and name one host\[:port\], the port at most 65535 \(got "postgres:\/\/\*\*\*@127\.0\.0\.1:5432\/app"\)$/],
    [{ DATABASE_URL: 'postgres://app:pw@127.0.0.1:99999/app' }, /^Invalid configuration: DATABASE_URL is not a URL the Postgres driver can read/],
    // The driver reads these as host "app" (or none) with the rest a database name: they failed later as ENOTFOUND app,
    // the password printed. Refused here, hidden.
    [{ DATABASE_URL: 'postgres://app:2024/S3cretPw@127.0.0.1:5499/app' }, /^Invalid configuration: DATABASE_URL is not a URL the Postgres driver can read: .* \(got "postgres:\/\/\*\*\*@127\.0\.0\.1:5499\/app"\)$/],
    [{ DATABASE_URL: 'postgres://app:/S3cretPw+x@127.0.0.1:5499/app' }, /^Invalid configuration: DATABASE_URL is not a URL the Postgres driver can read: .* \(got "postgres:\/\/\*\*\*@127\.0\.0\.1:5499\/app"\)$/],
    [{ DATABASE_URL: 'postgres:///app:S3cretPw@127.0.0.1:5499/app' }, /^Invalid configuration: DATABASE_URL is not a URL the Postgres driver can read: .* \(got "postgres:\/\/\*\*\*@127\.0\.0\.1:5499\/app"\)$/],
    [{ DATABASE_URL: 'postgres:/app:S3cretPw@127.0.0.1:5499/app' }, /^Invalid configuration: DATABASE_URL must start with sqlite: or postgres:\/\/ \(got "\*\*\*@127\.0\.0\.1:5499\/app"\)$/],
    // A run still marked running after an hour is taken for a crashed process's: a longer limit let a second run start.
    [{ RECIPE_TIMEOUT_SECONDS: '7200' }, /^Invalid configuration: RECIPE_TIMEOUT_SECONDS must be at most 3000 \(got "7200"\)$/],
    [{ DATABASE_URL: 'postgres://app:pw@h1:5432,h2:5432/app' }, /^Invalid configuration: DATABASE_URL is not a URL the Postgres driver can read/],
    [{ WEBHOOK_ALLOW_UNSIGNED: 'maybe' }, /^Invalid configuration: WEBHOOK_ALLOW_UNSIGNED must be true or false/],
    [{ WEBHOOK_TARGETS: '{"formant":{"scheme":"standard","secrets":"whsec_Y3JtLXNlY3JldC1jcm0tc2VjcmV0LWNybS1zZWNyZXQ="}}' }, /^Invalid configuration: WEBHOOK_TARGETS cannot name a target "formant"/],
    [{ WEBHOOK_TARGETS: '{"gh":{"scheme":"hmac","secrets":"x","header":"X Hub"}}' }, /^Invalid configuration: WEBHOOK_TARGETS must be an HTTP header name .* at gh\.header$/],
    [{ WEBHOOK_TARGETS: '{"gh":{"scheme":"hmac","secrets":"x","header":"X-Sig","timestampHeader":""}}' }, /^Invalid configuration: WEBHOOK_TARGETS must be an HTTP header name .* at gh\.timestampHeader$/],
    [{ SMTP_URL: 'smtp://[bad' }, /^Invalid configuration: SMTP_URL must be a URL: smtp\(s\):\/\/\[user:password@\]host\[:port\]$/],
    [{ SMTP_URL: 'smtp://u:pw@mail.example:99999' }, /^Invalid configuration: SMTP_URL must be a URL/],
    [{ MAIL_FROM: 'ops team' }, /^Invalid configuration: MAIL_FROM must be one email address/],
  ])('refuses %o with one line naming the variable', (env, message) => {
    let error: unknown
    try {
      load(env)
    } catch (e) {
      error = e
    }
    expect(error).toBeInstanceOf(ConfigError)
    expect((error as Error).message).toMatch(message)
    expect((error as Error).message).not.toContain('\n')
  })

  it('reads DATABASE_URL without the spaces around it (a compose file or YAML slip), as every other setting', () => {
    // It was refused with "must start with sqlite: or postgres://", showing a value that did.
    expect(load({ DATABASE_URL: ' postgres://app:pw@127.0.0.1:5432/app ' }).databaseUrl).toBe('postgres://app:pw@127.0.0.1:5432/app')
  })

  it('refuses a DATA_DIR that is a file (it is made when missing)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sb-config-'))
    try {
      writeFileSync(join(dir, 'afile'), '')
      expect(() => load({ DATA_DIR: join(dir, 'afile') })).toThrow(`Invalid configuration: DATA_DIR is not a directory: ${join(dir, 'afile')}`)
      expect(load({ DATA_DIR: join(dir, 'missing') }).dataDir).toBe(join(dir, 'missing'))
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('a config file value of the wrong kind says what the setting takes, not "Invalid input"', () => {
    const fromFile = (file: Record<string, unknown>) => () => loadConfig({ env: {}, cwd: '/srv/app', file, fileName: 'switchboard.config.ts' })
    expect(fromFile({ REPORT_TO: 5 })).toThrow(/^Invalid configuration: REPORT_TO must be email addresses: a comma-separated string, or a list of strings/)
    expect(fromFile({ DESTINATIONS: {} })).toThrow(/^Invalid configuration: DESTINATIONS must be a list of destinations \(\[\{ name, url, secret, … \}\]\)/)
    // Every setting alike, those with no words of their own included — a secret's value never shown.
    expect(fromFile({ HOST: 127 })).toThrow(/^Invalid configuration: HOST must be text \(a string in quotes\) \(got 127\)$/)
    expect(fromFile({ DEFAULT_COUNTRY: 91 })).toThrow(/^Invalid configuration: DEFAULT_COUNTRY must be text \(a string in quotes\) \(got 91\)$/)
    expect(fromFile({ WEBHOOK_TARGETS: [] })).toThrow(/^Invalid configuration: WEBHOOK_TARGETS must be an object \(\{ name: … \}\) \(got a list\)$/)
    expect(fromFile({ ADMIN_TOKEN: 12345678901234567 })).toThrow(/^Invalid configuration: ADMIN_TOKEN must be text \(a string in quotes\)$/)
  })

  it('reads booleans in any case, and takes a sender on a bare host name', () => {
    expect(load({ WEBHOOK_ALLOW_UNSIGNED: ' TRUE ' }).webhook.allowUnsigned).toBe(true)
    expect(load({ MAIL_FROM: 'switchboard@localhost' }).mail.from).toBe('switchboard@localhost')
    expect(load({ MAIL_FROM: '"Ops, Reports" <reports@example.com>' }).mail.from).toBe('"Ops, Reports" <reports@example.com>')
  })

  it('never echoes a provider URL that holds a secret', () => {
    const message = (() => {
      try {
        load({ VOICE_API_BASE_URL: 'https://apiuser:hunter2@127.0.0.1:1/v1' })
      } catch (e) {
        return (e as Error).message
      }
    })()
    expect(message).toBe('Invalid configuration: VOICE_API_BASE_URL must be a plain http(s) base URL, without credentials, a query or a fragment (got "https://***@127.0.0.1:1/…")')
  })

  it('never echoes a secret in an error', () => {
    expect(() => load({ ADMIN_TOKEN: 'short' })).toThrow(/^Invalid configuration: ADMIN_TOKEN must be at least 16 characters$/)
  })

  it('ADMIN_TOKEN is trimmed: pasted with a space at either end (a Docker env-file), it still works as typed', () => {
    expect(load({ ADMIN_TOKEN: ' test-admin-token-0123456789 \t' }).adminToken).toBe('test-admin-token-0123456789')
    expect(() => load({ ADMIN_TOKEN: '   short    ' })).toThrow(/^Invalid configuration: ADMIN_TOKEN must be at least 16 characters$/)
  })

  it('never echoes WEBHOOK_TARGETS, and shows a URL setting with its credentials masked', () => {
    const messageOf = (env: Record<string, string>) => {
      try {
        load(env)
      } catch (error) {
        return (error as Error).message
      }
      throw new Error('no error')
    }
    const malformed = messageOf({ WEBHOOK_TARGETS: '{"crm":{"scheme":"standard","secrets":"whsec_TOPSECRET"}' })
    expect(malformed).toBe('Invalid configuration: WEBHOOK_TARGETS must be a JSON object')
    const array = messageOf({ WEBHOOK_TARGETS: '["whsec_TOPSECRET"]' })
    expect(array).toMatch(/^Invalid configuration: WEBHOOK_TARGETS /)
    expect(array).not.toContain('TOPSECRET')
    expect(messageOf({ DATABASE_URL: 'postgresq://admin:hunter2pass@db/app' })).toBe(
      'Invalid configuration: DATABASE_URL must start with sqlite: or postgres:// (got "postgresq://***@db/app")',
    )
    expect(messageOf({ VOICE_API_BASE_URL: 'ftp://key:hunter2pass@api.example/v1' })).toBe(
      'Invalid configuration: VOICE_API_BASE_URL must be an http(s) URL (got "ftp://***@api.example/v1")',
    )
    // Not a URL the parser takes, or a password in the query: still not shown.
    expect(messageOf({ DATABASE_URL: 'postgres//admin:hunter2pass@db/app' })).toBe('Invalid configuration: DATABASE_URL must start with sqlite: or postgres:// (got "***@db/app")')
    expect(messageOf({ DATABASE_URL: 'postgresq://db/app?user=admin&password=hunter2pass' })).toBe(
      'Invalid configuration: DATABASE_URL must start with sqlite: or postgres:// (got "postgresq://db/app?…")',
    )
    // A URL without credentials is shown as it is: it is the mistake to see.
    expect(messageOf({ DATABASE_URL: 'mysql://db/app' })).toBe('Invalid configuration: DATABASE_URL must start with sqlite: or postgres:// (got "mysql://db/app")')
  })

  it('lets the environment override switchboard.config.ts values', () => {
    const c = loadConfig({ env: { PORT: '4000' }, file: { PORT: 5000, RECIPES_TIMEZONE: 'Europe/Berlin' } })
    expect(c.port).toBe(4000)
    expect(c.recipes.timezone).toBe('Europe/Berlin')
  })
})
