/** What the main thread tells the processing thread (src/processing-host.ts → src/processing-thread.ts). */
export type ThreadMessage =
  | { type: 'wake' }
  | { type: 'metrics'; id: number }
  | { type: 'task'; id: number; name: string; args: unknown }
  | { type: 'stop' }

/** What the processing thread answers. */
/** How often the processing thread says it is alive. */
export const ALIVE_EVERY_MS = 1_000

export type ThreadReply =
  /**
   * The thread's runtime, whose claims the host gives back should the thread die: sent as soon as the runtime exists,
   * before anything is claimed (a thread can die while still starting, its start-up catch-up already claimed).
   */
  | { type: 'instance'; instanceId: string }
  | { type: 'ready'; instanceId: string }
  | { type: 'metrics'; id: number; json: unknown }
  | { type: 'task'; id: number; ok: true; value: unknown }
  | { type: 'task'; id: number; ok: false; error: string }
  | { type: 'stopped' }
  /** Sent every ALIVE_EVERY_MS while the thread's event loop turns: the host's watchdog (src/processing-host.ts). */
  | { type: 'alive' }
  /** A recipe file about to load (its top-level code runs then), and done loading: src/recipes/load-watch.ts. */
  | { type: 'loading'; file: string }
  | { type: 'loaded'; file: string }
  | { type: 'failed'; error: string }
