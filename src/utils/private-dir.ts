import { mkdirSync } from 'node:fs'

/**
 * Makes `dir` (and any missing parent) readable by this user only (0700), as the secrets in it are: the data folder
 * holds the database — transcripts, phone numbers, the do-not-call list — the mail outbox and the batch inbox, which
 * under the usual umask any user of the machine could read. A folder that exists keeps its mode: an operator's
 * choice (a backup user's group) is theirs.
 */
export function makePrivateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 })
}
