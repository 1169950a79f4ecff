import { readFileSync, readlinkSync } from 'node:fs'

/**
 * Who a process is, exactly, on Linux: the kernel's boot id, the pid namespace, the pid and the process's start
 * time in clock ticks since boot — `<boot>/<namespace>/<pid>/<start>`. A pid alone is reused; with the start time
 * it is not, within one boot and one namespace. Undefined elsewhere (no /proc).
 */
export function processIdentity(pid: number = process.pid): string | undefined {
  // This process's identity is fixed for its lifetime (every recipe run records it): kept once read. A read that
  // failed is tried again next time.
  if (pid === process.pid) return (identityOfThisProcess ??= identityOf(pid))
  return identityOf(pid)
}

let identityOfThisProcess: string | undefined

function identityOf(pid: number): string | undefined {
  const scope = ownScope()
  const stat = scope ? readStat(pid) : undefined
  return !stat || stat.zombie ? undefined : `${scope}/${pid}/${stat.start}`
}

/** `<boot>/<pid namespace>` of this process: fixed for its lifetime, so read once. */
let scope: string | null | undefined
function ownScope(): string | undefined {
  if (scope === undefined) {
    try {
      scope = `${readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim()}/${readlinkSync('/proc/self/ns/pid')}`
    } catch {
      scope = null
    }
  }
  return scope ?? undefined
}

/** The process id an identity names (boot/namespace/pid/start), for saying which process it is. */
export function pidOf(identity: string): string | undefined {
  return identity.split('/')[2]
}

/**
 * Whether the process an identity names still runs: true or false when it belongs to this boot and pid namespace
 * (the same kernel, seeing the same pids), undefined when this process cannot tell (another machine, another
 * container's namespace, an earlier boot, a process it may not look at, a malformed identity).
 */
export function isProcessAlive(identity: string): boolean | undefined {
  // This process: alive, without reading /proc again.
  if (identity === processIdentity()) return true
  const own = ownScope()
  if (!own) return undefined
  const [boot, namespace, pidText, start] = identity.split('/')
  if (!boot || !namespace || !pidText || !start || `${boot}/${namespace}` !== own || !/^\d+$/.test(pidText)) return undefined
  const pid = Number(pidText)
  if (pid <= 0) return undefined
  const stat = readStat(pid)
  // A zombie was killed and runs no more (its parent has not collected it yet).
  if (stat) return !stat.zombie && stat.start === start
  // No /proc entry: gone — or hidden (/proc mounted with hidepid, another user's process). Signal 0 tells which.
  try {
    process.kill(pid, 0)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return false
  }
  return undefined
}

/** From /proc/<pid>/stat: field 22 (start time) and whether it is a zombie; undefined when it cannot be read. */
function readStat(pid: number): { start: string; zombie: boolean } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // After the parenthesised name, which may itself hold spaces and parentheses.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    const start = fields[19]
    return start ? { start, zombie: fields[0] === 'Z' || fields[0] === 'X' } : undefined
  } catch {
    return undefined
  }
}
