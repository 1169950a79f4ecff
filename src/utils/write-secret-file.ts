import { randomBytes } from 'node:crypto'
import { renameSync, rmSync, writeFileSync } from 'node:fs'

/**
 * Writes a generated secret readable by its owner only, whatever was at `file` before: a new file (0600, never
 * through a symlink or into an existing file, whose mode a write would keep) renamed over it.
 */
export function writeSecretFile(file: string, secret: string): void {
  const temp = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`
  try {
    writeFileSync(temp, secret + '\n', { mode: 0o600, flag: 'wx' })
    renameSync(temp, file)
  } catch (error) {
    try {
      rmSync(temp, { force: true })
    } catch {
      // A folder this process may not enter fails the clean-up too (EACCES on lstat): the write's own error says why.
    }
    throw error
  }
}
