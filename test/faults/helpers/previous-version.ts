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

/**
 * The previous version of switchboard, for a rolling-deploy test: the newest commit on the main line
 * (first parents: what was released, not a branch's work in progress) whose migrations are a proper
 * prefix of today's — so today's code only adds migrations after the ones it ran — extracted from git into
 * a temporary folder that shares this checkout's node_modules. Undefined when git history is unavailable.
 */
export function extractPreviousVersion(): { dir: string; commit: string; remove(): void } | undefined {
  const git = (...args: string[]) => execFileSync('git', args, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], maxBuffer: 64 * 1024 * 1024 }).trim()
  let commit: string | undefined
  try {
    const current = migrationNames(readFileSync(join(ROOT, 'src/db/migrations.ts'), 'utf8'))
    const changes = git('log', '--first-parent', '--format=%H', '--', 'src/db/migrations.ts').split('\n').filter(Boolean)
    for (const candidate of changes) {
      const names = migrationNames(git('show', `${candidate}:src/db/migrations.ts`))
      if (names.length > 0 && names.length < current.length && names.every((n, i) => n === current[i])) {
        commit = candidate
        break
      }
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
