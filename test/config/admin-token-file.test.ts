import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { adminTokenFile, ensureAdminToken } from '../../src/config/admin-token.ts'
import { ensureSandboxSecret, loadConfig } from '../../src/config/load.ts'

const modeOf = (file: string) => statSync(file).mode & 0o777

describe.skipIf(process.platform === 'win32')('the generated admin token file', () => {
  let dataDir: string | undefined
  afterEach(() => {
    if (dataDir) rmSync(dataDir, { recursive: true, force: true })
    dataDir = undefined
  })

  it('is 0600 even when a too-short token file was there, world-readable (0644)', () => {
    dataDir = mkdtempSync(join(tmpdir(), 'sb-admin-token-'))
    const file = adminTokenFile(dataDir)
    writeFileSync(file, 'short\n', { mode: 0o644 })
    chmodSync(file, 0o644)
    expect(modeOf(file)).toBe(0o644)

    const { config, source } = ensureAdminToken(loadConfig({ env: { DATA_DIR: dataDir }, cwd: dataDir }))
    expect(source).toBe('generated')
    expect(readFileSync(file, 'utf8').trim()).toBe(config.adminToken)
    expect(config.adminToken!.length).toBeGreaterThanOrEqual(32)
    expect(modeOf(file)).toBe(0o600)
    // Nothing left beside it (the file written before the rename) but the marker of a token no banner has shown yet.
    expect(readdirSync(dataDir).sort()).toEqual(['admin-token', 'admin-token.unshown'])

    // The next start reads it back, and leaves it as it is.
    const again = ensureAdminToken(loadConfig({ env: { DATA_DIR: dataDir }, cwd: dataDir }))
    expect(again.source).toBe('unshown')
    expect(again.config.adminToken).toBe(config.adminToken)
    expect(modeOf(file)).toBe(0o600)
  })

  it('is 0600 when there was none', () => {
    dataDir = mkdtempSync(join(tmpdir(), 'sb-admin-token-'))
    const { source } = ensureAdminToken(loadConfig({ env: { DATA_DIR: join(dataDir, 'nested') }, cwd: dataDir }))
    expect(source).toBe('generated')
    expect(modeOf(adminTokenFile(join(dataDir, 'nested')))).toBe(0o600)
  })

  // The sandbox's generated webhook secret is a secret too: the same write, whatever was at its path.
  it('the generated webhook secret is 0600 even when an empty, world-readable file was there', () => {
    dataDir = mkdtempSync(join(tmpdir(), 'sb-admin-token-'))
    const file = join(dataDir, 'webhook-secret')
    writeFileSync(file, '', { mode: 0o644 })
    chmodSync(file, 0o644)
    const config = ensureSandboxSecret(loadConfig({ env: { DATA_DIR: dataDir }, cwd: dataDir }))
    expect(readFileSync(file, 'utf8')).toBe(`${config.webhook.secrets[0]}\n`)
    expect(config.webhook.secrets[0]).toMatch(/^whsec_[0-9a-f]{48}$/)
    expect(modeOf(file)).toBe(0o600)
    expect(readdirSync(dataDir)).toEqual(['webhook-secret'])
  })
})
