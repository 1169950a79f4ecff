import { existsSync, mkdirSync, statSync } from 'node:fs'
import { dirname, resolve } from 'node:path'

/**
 * Makes `dir` (and any missing parent) readable by this user only (0700), as the secrets in it are: the data folder
 * holds the database — transcripts, phone numbers, the do-not-call list — the mail outbox and the batch inbox, which
 * under the usual umask any user of the machine could read. A folder that exists keeps its mode: an operator's
 * choice (a backup user's group) is theirs.
 *
 * Each missing folder is made on its own, from the first one that exists down: Node's `recursive` mkdir retries for
 * ever where a folder cannot be made but its parent exists (under /proc, which answers ENOENT), and a CLI command or
 * `serve` given such a DATA_DIR spun a core until killed, deaf to SIGTERM.
 */
export function makePrivateDir(dir: string): void {
  const missing: string[] = []
  for (let at = resolve(dir); !existsSync(at); at = dirname(at)) {
    missing.push(at)
    if (dirname(at) === at) break
  }
  // There, but a file: mkdir's own error names it (EEXIST), as the recursive mkdir's did.
  if (missing.length === 0 && !statSync(dir).isDirectory()) mkdirSync(dir)
  for (const folder of missing.reverse()) {
    try {
      mkdirSync(folder, { mode: 0o700 })
    } catch (error) {
      // Made meanwhile by another process (two commands starting at once): what was wanted.
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
    }
  }
}
