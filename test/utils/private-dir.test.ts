import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, expect, it } from 'vitest'
import { makePrivateDir } from '../../src/utils/private-dir.ts'

let dir: string | undefined
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true })
  dir = undefined
})

it('makes the folder and its missing parents, each 0700, and leaves one that exists as it is', () => {
  dir = mkdtempSync(join(tmpdir(), 'sb-private-dir-'))
  const nested = join(dir, 'a', 'b', 'c')
  makePrivateDir(nested)
  for (const folder of [join(dir, 'a'), join(dir, 'a', 'b'), nested]) expect(statSync(folder).mode & 0o777).toBe(0o700)
  makePrivateDir(nested)
  expect(existsSync(nested)).toBe(true)
})

it('fails at once where a folder cannot be made (a file in the way; under /proc) instead of retrying for ever', () => {
  dir = mkdtempSync(join(tmpdir(), 'sb-private-dir-'))
  writeFileSync(join(dir, 'file'), '')
  expect(() => makePrivateDir(join(dir!, 'file', 'sub'))).toThrow(/ENOTDIR|EEXIST/)
  // Node's recursive mkdir looped here, a core busy until the process was killed.
  if (existsSync('/proc/self')) expect(() => makePrivateDir('/proc/switchboard-nope/data')).toThrow(/ENOENT/)
})
