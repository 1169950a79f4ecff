/**
 * How long a `vi.waitFor` or `expect.poll` that names no timeout waits (test/helpers/wait-defaults.ts, vitest.config.ts):
 * vitest's default, 1 s, is what a condition needs on a quiet machine, not on a two-core one running the rest of the
 * suite beside it (a batch that commits, a thread that starts). A wait that holds returns as soon as it holds, so only
 * a failing test waits this long. A module of its own, with no side effects, so the config can import it.
 */
export const WAIT_MS = 10_000
