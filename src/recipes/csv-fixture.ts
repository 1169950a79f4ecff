import { statSync } from 'node:fs'
import { unreadableFileProblem } from '../utils/unreadable-file.ts'
import { basename, dirname, extname, join } from 'node:path'

/**
 * Why a name cannot be `recipes test --csv`'s contacts file; undefined when it can. The file is copied into the test's
 * inbox under its own name, and a batch recipe — the shipped nightly-batch, one made from the batch template — reads
 * only the inbox's `*.csv` files (as the service's does): `leads.txt` was copied, passed over, and the test planned
 * nothing with exit 0. Refused rather than renamed on the way in: the service would not read a `leads.txt` dropped in
 * its inbox either, and a test must not promise a batch the service would never launch.
 */
export function csvNameProblem(path: string): string | undefined {
  if (path.toLowerCase().endsWith('.csv')) return undefined
  const renamed = join(dirname(path), `${basename(path, extname(path))}.csv`)
  return `${path} is not named *.csv: a batch recipe reads only the .csv files of its inbox (as it does in the service), so it would plan nothing; rename it ${renamed}`
}

/**
 * Why `path` cannot be copied in as the contacts file (not there, a folder, not named .csv, not readable by this user);
 * undefined when it can. A file another user keeps to themselves (0600, or in their 0700 folder) failed the copy with
 * Node's bare `EACCES: permission denied, copyfile '…' -> '…'` (exit 1), or was said not to be there.
 */
export function csvFileProblem(path: string): string | undefined {
  let stat
  try {
    stat = statSync(path)
  } catch {
    // Not there, or in a folder this user may not enter.
    return unreadableFileProblem(path) ?? `no file at ${path}: expected a contacts CSV file`
  }
  if (stat.isDirectory()) return `${path} is a folder, not a CSV file`
  // A pipe or a device (/dev/stdin): the copy into the inbox would read it, or wait on it, as the batch never would.
  if (!stat.isFile()) return `${path} is not a regular file: expected a contacts CSV file`
  return csvNameProblem(path) ?? unreadableFileProblem(path)
}
