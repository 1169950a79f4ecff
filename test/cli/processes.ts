import { spawn, type ChildProcess } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { join } from 'node:path'
import { shippedRecipesCopy } from '../helpers/recipes.ts'

/** The repository root: where `npm start` and `src/bin.mjs` run from. */
export const ROOT = new URL('../..', import.meta.url).pathname

/** Every live descendant of `pid` (Linux /proc), so a test can tell whether a child outlived its parent. */
export function descendants(pid: number): number[] {
  const parents = new Map<number, number>()
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      // "pid (comm) state ppid …": comm may hold spaces and parentheses, so split after the last ")".
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
      parents.set(Number(entry), ppid)
    } catch {
      // the process ended while we looked
    }
  }
  const found: number[] = []
  const walk = (parent: number) => {
    for (const [child, ppid] of parents) {
      if (ppid === parent) {
        found.push(child)
        walk(child)
      }
    }
  }
  walk(pid)
  return found
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** True when nothing listens on the port any more (we can bind it ourselves). */
export function portIsFree(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer()
    server.once('error', () => resolve(false))
    server.listen(port, host, () => server.close(() => resolve(true)))
  })
}

export interface Spawned {
  child: ChildProcess
  stdout(): string
  stderr(): string
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
}

/** Spawns a command with piped output collected as text. */
export function spawnCollecting(command: string, args: string[], env: Record<string, string | undefined>): Spawned {
  const child = spawn(command, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  let err = ''
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()))
  child.stderr!.on('data', (c: Buffer) => (err += c.toString()))
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  )
  return { child, stdout: () => out, stderr: () => err, exited }
}

/** The environment of a child switchboard: ours minus anything that would change its mode. */
export function childEnv(extra: Record<string, string>): Record<string, string | undefined> {
  // No config file unless the test names one: these children run in the checkout, where a developer's own
  // switchboard.config.ts (real destinations, a real relay) may be.
  // Nor the checkout's recipes folder (the team's own recipes, broken or not): copies of the shipped ones.
  const env: Record<string, string | undefined> = { ...process.env, LOG_LEVEL: 'silent', SWITCHBOARD_CONFIG: 'none', RECIPES_DIR: shippedRecipesCopy(), ...extra }
  for (const key of ['VOICE_API_KEY', 'WEBHOOK_SECRET', 'DATABASE_URL', 'SMTP_URL', 'REPORT_TO', 'ADMIN_TOKEN']) {
    if (!(key in extra)) delete env[key]
  }
  return env
}

/** The uid (and gid) `asAnotherUser` takes when the tests run as root. */
export const NOBODY = 65534

/**
 * `node src/bin.mjs …` as a user other than the one that made the test's files: as `nobody` when the tests run as root
 * (root reads and writes any file, so only another user meets a file's mode), else as this user — then the test cuts
 * the file or folder's mode to what another user would meet.
 */
export function asAnotherUser(args: string[], env: Record<string, string | undefined>): Spawned {
  const bin = join(ROOT, 'src/bin.mjs')
  if (process.getuid?.() !== 0) return spawnCollecting(process.execPath, [bin, ...args], env)
  return spawnCollecting(process.execPath, [join(ROOT, 'test/cli/as-nobody.mjs'), String(NOBODY), bin, ...args], env)
}
