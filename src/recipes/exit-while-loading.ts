/**
 * A recipe's top-level code that calls `process.exit` while the file loads ended whatever loaded it: `doctor` and
 * `recipes check` stopped without a line (exit 0, or the recipe's code), and `serve`'s processing thread exited while
 * starting, naming no file — the service did not start. While a recipe file loads, `process.exit` called from its code
 * (its file on the call's stack) throws instead, and the loader names the file as broken; any other caller exits.
 */
const loading = new Set<string>()
let realExit: typeof process.exit | undefined

export function guardExitWhileLoading(file: string): () => void {
  loading.add(file)
  if (!realExit) {
    const exit = (realExit = process.exit)
    process.exit = ((code?: number | string | null) => {
      const stack = new Error().stack ?? ''
      for (const recipe of loading) {
        if (stack.includes(recipe)) throw new Error(`its top-level code calls process.exit(${code ?? ''}) while the file loads: a recipe must not end the process (do the work in run(), or throw)`)
      }
      return exit(code)
    }) as typeof process.exit
  }
  return () => {
    loading.delete(file)
    if (loading.size === 0 && realExit) {
      process.exit = realExit
      realExit = undefined
    }
  }
}
