import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'

const ROOT = resolve(import.meta.dirname, '../../..')

/** The migration names a version of `src/db/migrations.ts` registers, in order. */
function migrationNames(source: string): string[] {
  const map = source.slice(source.indexOf('export const migrations'))
  return [...map.matchAll(/'(\d{4}_[a-z0-9_]+)'\s*:/g)].map((m) => m[1]!)
}

function versionOf(packageJson: string): string | undefined {
  try {
    return (JSON.parse(packageJson) as { version?: string }).version
  } catch {
    return undefined
  }
}

/**
 * The previous release of switchboard, for a rolling-deploy test: what a deploy of this checkout runs beside.
 * Each release bumps `version` in package.json (README → Operations → Rolling deploys), so the previous
 * release is the last commit on the main line (first parents: what was released, not a branch's work in
 * progress) before the current version was set — HEAD itself while the bump is not yet committed. Its
 * migrations must be a prefix of today's (today's code only adds migrations after the ones it ran).
 * When history has no earlier version, the newest commit whose migrations are a proper prefix of today's.
 * Extracted from git into a temporary folder that shares this checkout's node_modules; undefined when git
 * history is unavailable.
 */
export function extractPreviousVersion(): { dir: string; commit: string; remove(): void } | undefined {
  const git = (...args: string[]) => execFileSync('git', args, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], maxBuffer: 64 * 1024 * 1024 }).trim()
  let commit: string | undefined
  try {
    const current = migrationNames(readFileSync(join(ROOT, 'src/db/migrations.ts'), 'utf8'))
    const isPrefix = (rev: string, proper: boolean) => {
      const names = migrationNames(git('show', `${rev}:src/db/migrations.ts`))
      return names.length > 0 && (proper ? names.length < current.length : names.length <= current.length) && names.every((n, i) => n === current[i])
    }
    const version = versionOf(readFileSync(join(ROOT, 'package.json'), 'utf8'))
    const mainLine = git('rev-list', '--first-parent', 'HEAD').split('\n').filter(Boolean)
    const bumps = git('log', '--first-parent', '--format=%H', '--', 'package.json').split('\n').filter(Boolean)
    // Newest first: the oldest of the newest run of commits at the current version is where it was set.
    let setAt: string | undefined
    let earlier = false
    for (const candidate of bumps) {
      if (versionOf(git('show', `${candidate}:package.json`)) !== version) {
        earlier = true
        break
      }
      setAt = candidate
    }
    if (earlier) {
      const previous = setAt ? mainLine[mainLine.indexOf(setAt) + 1] : mainLine[0]
      if (previous && isPrefix(previous, false)) commit = previous
    }
    if (!commit) {
      const changes = git('log', '--first-parent', '--format=%H', '--', 'src/db/migrations.ts').split('\n').filter(Boolean)
      commit = changes.find((candidate) => isPrefix(candidate, true))
    }
  } catch {
    return undefined
  }
  if (!commit) return undefined
  const dir = mkdtempSync(join(tmpdir(), 'sb-previous-'))
  execFileSync('sh', ['-c', `git archive ${commit} src package.json tsconfig.json | tar -x -C "${dir}"`], { cwd: ROOT })
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir')
  return { dir, commit, remove: () => rmSync(dir, { recursive: true, force: true }) }
}
