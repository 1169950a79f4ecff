import { constants as fsConstants, existsSync } from 'node:fs'
import { join } from 'node:path'
import { mayAccess, ownerAndMode } from './owner-and-mode.ts'

/**
 * DATA_DIR and the folders the service writes in below it, each with what fails there when this user may not write in
 * it. The usual cause is a second user: a command run as root made `outbox/` or `inbox/failed/`, and the service's own
 * user then fails at the first report or the first unreadable batch file — hours after a start that said nothing.
 */
const DATA_FOLDERS: ReadonlyArray<readonly [string, string]> = [
  ['', 'everything kept there fails (the database, the webhook secret, the folders below)'],
  ['outbox', 'mail written without SMTP_URL (the daily report) fails'],
  ['recordings', 'serve refuses to start (the proxy keeps recordings there)'],
  ['recordings/tmp', 'serve refuses to start (the proxy keeps recordings there)'],
  ['inbox', 'batch files dropped in for nightly-batch are not moved on, and fail again every run'],
  ['inbox/done', 'batch files dropped in for nightly-batch are not moved on, and fail again every run'],
  ['inbox/failed', 'batch files dropped in for nightly-batch are not moved on, and fail again every run'],
  ['inbox/waiting', 'contacts outside their calling hours cannot be kept there for later'],
]

/** A folder of DATA_DIR this user may not list, read and write in: where, what fails there, and its owner and mode. */
export interface BlockedFolder {
  path: string
  what: string
  /** `owner uid 0, mode 700`, when it can be read. */
  owned: string | undefined
}

/**
 * DATA_DIR and each of its folders that exists that this user may not list, read and write in (a folder not made yet is
 * made by its first use). A folder inside one this user may not enter does not "exist" to it: the one in the way is named.
 */
export function blockedDataFolders(dataDir: string): BlockedFolder[] {
  if (!existsSync(dataDir)) return []
  return DATA_FOLDERS.map(([sub, what]) => ({ path: sub ? join(dataDir, sub) : dataDir, what }))
    .filter((folder) => existsSync(folder.path) && !mayAccess(folder.path, fsConstants.R_OK | fsConstants.W_OK | fsConstants.X_OK))
    .map((folder) => ({ ...folder, owned: ownerAndMode(folder.path) }))
}

/** The way out of a blocked folder, as every such line says it. */
export const BLOCKED_FOLDER_FIX = 'run switchboard as the user that owns it, or give this user access to it (chown or chmod)'
