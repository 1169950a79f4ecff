import { mkdir, rename, writeFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'

/** Where mail goes without SMTP_URL. */
export function outboxDir(dataDir: string): string {
  return resolve(dataDir, 'outbox')
}

/** `20261121T023000123Z`: sorts by time, safe in every file system. */
function stamp(ms: number): string {
  return new Date(ms).toISOString().replace(/[-:.]/g, '')
}

/**
 * Writes one message as `<timestamp>-<id>.eml`. Written under a temporary name and renamed, so a reader
 * polling the folder never sees half a message.
 */
export async function writeOutboxMessage(dataDir: string, id: string, nowMs: number, message: Buffer): Promise<string> {
  const dir = outboxDir(dataDir)
  // The user's alone, as the data folder is (src/utils/private-dir.ts): a report's message carries its CSV of numbers.
  await mkdir(dir, { recursive: true, mode: 0o700 })
  const file = join(dir, `${stamp(nowMs)}-${id}.eml`)
  const tmp = `${file}.tmp`
  await writeFile(tmp, message, { mode: 0o600 })
  await rename(tmp, file)
  return file
}
