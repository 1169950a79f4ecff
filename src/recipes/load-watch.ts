import { statSync } from 'node:fs'
import type { Runtime } from '../runtime.ts'

/**
 * Who is told, as recipe files load, which one is loading now: `serve`'s processing thread tells its host
 * (src/processing-host.ts), whose watchdog can then name a file whose top-level code never returns — a synchronous
 * loop, which no time limit inside the thread can cut — and leave it out of the next thread (`leftOut`).
 */
export interface LoadWatch {
  /** Before the file's module is imported (its top-level code runs then). */
  loading(file: string): void
  /** After, whatever came of it. */
  loaded(file: string): void
  /** Why the file is not loaded at all (it held an earlier thread for good, and has not changed since), else undefined. */
  leftOut(file: string): string | undefined
}

const watches = new WeakMap<Runtime, LoadWatch>()

export function setLoadWatch(rt: Runtime, watch: LoadWatch): void {
  watches.set(rt, watch)
}

export function loadWatchOf(rt: Runtime): LoadWatch | undefined {
  return watches.get(rt)
}

/** A file as it is now (size and modification time): a file left out loads again once this changes. */
export function fileVersion(file: string): string | undefined {
  try {
    const stat = statSync(file)
    return `${stat.size}:${stat.mtimeMs}`
  } catch {
    return undefined
  }
}
