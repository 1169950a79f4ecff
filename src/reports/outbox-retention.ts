import { readdir, unlink } from 'node:fs/promises'
import { join } from 'node:path'
import { outboxDir } from './outbox.ts'

/** `<20261121T023000123Z>-<id>.eml`, or its `.tmp` left by a write a crash cut short: the outbox's own names. */
const OUTBOX_NAME = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})(\d{3})Z-[^/]+\.eml(?:\.tmp)?$/

/** When a message of the outbox was written, read off its name; undefined for a file the outbox did not name. */
function writtenAt(name: string): number | undefined {
  const m = OUTBOX_NAME.exec(name)
  if (!m) return undefined
  const [, y, mo, d, h, mi, s, ms] = m.map(Number) as [number, number, number, number, number, number, number, number]
  const at = Date.UTC(y, mo - 1, d, h, mi, s, ms)
  return Number.isNaN(at) ? undefined : at
}

/**
 * Removes the messages the outbox wrote (`$DATA_DIR/outbox/*.eml`, without SMTP_URL) before `cutoff`, as the call
 * history's purge removes their rows from the mail log: a daily report's message carries its zipped CSV, megabytes a
 * day kept for good. Only the outbox's own names are read (by the time in them, not the file's mtime, which a copy or a
 * restore resets); any other file a user put there stays. Each replica removes its own: the folder is in its DATA_DIR.
 */
export async function purgeOutbox(dataDir: string, cutoff: number): Promise<number> {
  const dir = outboxDir(dataDir)
  let names: string[]
  try {
    names = await readdir(dir)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 0
    throw error
  }
  let removed = 0
  for (const name of names) {
    const at = writtenAt(name)
    if (at === undefined || at >= cutoff) continue
    try {
      await unlink(join(dir, name))
      removed++
    } catch (error) {
      // Removed meanwhile (another process on the same folder): what was wanted.
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
    }
  }
  return removed
}
