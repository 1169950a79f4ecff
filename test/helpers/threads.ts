import { readdirSync, readFileSync } from 'node:fs'

export interface ThreadStat {
  tid: number
  /** The thread's name (Node 22 and later name theirs: MainThread, libuv-worker, …; Node 20's are all "node"). */
  name: string
  /** Linux nice value. */
  nice: number
  /** User + system CPU time, ms (10 ms resolution). */
  cpuMs: number
}

/** Each thread of process `pid` (this one by default), from /proc/<pid>/task/<tid>/stat (Linux only). */
export function threadStats(pid: number | 'self' = 'self'): ThreadStat[] {
  return readdirSync(`/proc/${pid}/task`).map((tid) => {
    const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8')
    // The command name is in parentheses and may hold spaces: count fields after its closing one.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return { tid: Number(tid), name: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')), nice: Number(fields[16]), cpuMs: ((Number(fields[11]) + Number(fields[12])) * 1000) / 100 }
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
