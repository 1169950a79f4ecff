import { existsSync, mkdirSync, readFileSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { writeSecretFile } from '../utils/write-secret-file.ts'
import type { Config } from './load.ts'

export function adminTokenFile(dataDir: string): string {
  return join(dataDir, 'admin-token')
}

/**
 * The admin token: ADMIN_TOKEN, else the one kept in DATA_DIR/admin-token, else a new one written there
 * (mode 0600). The token is shown only by the start that generated it (the banner); later starts name the file.
 */
export type AdminTokenSource = 'config' | 'file' | 'generated'

/**
 * Writes the token so the file ends up 0600 whatever was there: `mode` applies only when a file is created, so
 * writing over an old (too short) token kept that file's 0644. A new file beside it, created 0600 and renamed
 * over the old one, replaces it whole — a symlink at that path included, never written through.
 */
export function ensureAdminToken(config: Config): { config: Config; generated: boolean; source: AdminTokenSource } {
  if (config.adminToken) return { config, generated: false, source: 'config' }
  const file = adminTokenFile(config.dataDir)
  let token = existsSync(file) ? readFileSync(file, 'utf8').trim() : ''
  let generated = false
  if (token.length < 16) {
    mkdirSync(config.dataDir, { recursive: true })
    token = `sbadm_${randomBytes(24).toString('base64url')}`
    writeSecretFile(file, token)
    generated = true
  }
  return { config: { ...config, adminToken: token }, generated, source: generated ? 'generated' : 'file' }
}
