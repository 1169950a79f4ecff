import { readFileSync, readlinkSync } from 'node:fs'

/**
 * Who a process is, exactly, on Linux: the kernel's boot id, the pid namespace, the pid and the process's start
 * time in clock ticks since boot — `<boot>/<namespace>/<pid>/<start>`. A pid alone is reused; with the start time
 * it is not, within one boot and one namespace. Undefined elsewhere (no /proc).
 */
export function processIdentity(pid: number = process.pid): string | undefined {
  try {
    const boot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim()
    const namespace = readlinkSync('/proc/self/ns/pid')
    const start = startTicks(pid)
    return start === undefined ? undefined : `${boot}/${namespace}/${pid}/${start}`
  } catch {
    return undefined
  }
}

/**
 * Whether the process an identity names still runs: true or false when it belongs to this boot and pid namespace
 * (the same kernel, seeing the same pids), undefined when this process cannot tell (another machine, another
 * container's namespace, an earlier boot, a malformed identity).
 */
export function isProcessAlive(identity: string): boolean | undefined {
  const own = processIdentity()
  if (!own) return undefined
  const [boot, namespace, pid, start] = identity.split('/')
  const [ownBoot, ownNamespace] = own.split('/')
  if (!boot || !namespace || !pid || !start || boot !== ownBoot || namespace !== ownNamespace || !/^\d+$/.test(pid)) return undefined
  return startTicks(Number(pid)) === start
}

/**
 * Field 22 of /proc/<pid>/stat (after the parenthesised name, which may itself hold spaces); undefined for a pid
 * that does not exist or a zombie (killed, not yet collected by its parent: it runs no more).
 */
function startTicks(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return fields[0] === 'Z' || fields[0] === 'X' ? undefined : fields[19]
  } catch {
    return undefined
  }
}
