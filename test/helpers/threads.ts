import { readdirSync, readFileSync } from 'node:fs'

export interface ThreadStat {
  tid: number
  /** Linux nice value. */
  nice: number
  /** User + system CPU time, ms (10 ms resolution). */
  cpuMs: number
}

/** Each thread of this process, from /proc/self/task/<tid>/stat (Linux only). */
export function threadStats(): ThreadStat[] {
  return readdirSync('/proc/self/task').map((tid) => {
    const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8')
    // The command name is in parentheses and may hold spaces: count fields after its closing one.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return { tid: Number(tid), nice: Number(fields[16]), cpuMs: ((Number(fields[11]) + Number(fields[12])) * 1000) / 100 }
  })
}

/** A process's CPU time (user + system, all its threads) in ms, from /proc (Linux); undefined elsewhere. */
export function processCpuMs(pid: number | undefined): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100
  } catch {
    return undefined
  }
}
