import { existsSync, readFileSync, rmSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { writeSecretFile } from '../utils/write-secret-file.ts'
import { makeDataDir, onKeptSecret, type Config } from './load.ts'

export function adminTokenFile(dataDir: string): string {
  return join(dataDir, 'admin-token')
}

/**
 * Beside a generated token until a start's banner has shown it. A start can fail after making the token (the port is
 * busy, the database will not open): the next start that comes up shows it then, where it used to name only the file
 * of a token nobody had seen. No marker, nothing to show: a token kept from before this file existed stays unprinted.
 */
export function adminTokenUnshownFile(dataDir: string): string {
  return join(dataDir, 'admin-token.unshown')
}

/**
 * The admin token: ADMIN_TOKEN, else the one kept in DATA_DIR/admin-token, else a new one written there
 * (mode 0600). The token is shown only by the first start that comes up with it, in a terminal (the banner); later
 * starts name the file. `unshown`: kept in the file by an earlier start whose banner never showed it.
 */
export type AdminTokenSource = 'config' | 'file' | 'generated' | 'unshown'

/**
 * Writes the token so the file ends up 0600 whatever was there: `mode` applies only when a file is created, so
 * writing over an old (too short) token kept that file's 0644. A new file beside it, created 0600 and renamed
 * over the old one, replaces it whole — a symlink at that path included, never written through.
 */
export function ensureAdminToken(config: Config): { config: Config; generated: boolean; source: AdminTokenSource } {
  if (config.adminToken) return { config, generated: false, source: 'config' }
  const file = adminTokenFile(config.dataDir)
  const unshown = adminTokenUnshownFile(config.dataDir)
  // `serve` run as another user than the file's is one line naming it and the ways out — a refusal to start, exit 2.
  const kept = { setting: 'ADMIN_TOKEN', keeps: 'switchboard keeps its admin token', file, dataDir: config.dataDir }
  let token = onKeptSecret(kept, 'read', () => (existsSync(file) ? readFileSync(file, 'utf8').trim() : ''))
  let generated = false
  if (token.length < 16) {
    makeDataDir(config.dataDir)
    const made = `sbadm_${randomBytes(24).toString('base64url')}`
    onKeptSecret(kept, 'create', () => {
      // The marker first: a start stopped between the two writes leaves a marker without a token (the next one makes
      // both again), never a token no banner will show. Written as the token is: never through a link at its path.
      writeSecretFile(unshown, '')
      writeSecretFile(file, made)
    })
    token = made
    generated = true
  }
  const source = generated ? 'generated' : existsSync(unshown) ? 'unshown' : 'file'
  return { config: { ...config, adminToken: token }, generated, source }
}

/** After a banner has printed the token: later starts name the file. Best effort — at worst the token is shown again. */
export function markAdminTokenShown(dataDir: string): void {
  try {
    rmSync(adminTokenUnshownFile(dataDir), { force: true })
  } catch {
    // A DATA_DIR we may not write to any more: the next start shows the token once more.
  }
}
