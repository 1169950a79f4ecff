import { Counter, type Registry } from 'prom-client'
import type { Logger } from '../utils/logger.ts'
import { inRoots, recipeFrame, recipeRoots, stackFrames } from './recipe-frame.ts'

/**
 * Whether recipe code threw `error` where nothing could catch it: the outermost frame of its stack that is not Node's
 * own is in one of `dirs` (a recipes folder: the recipe or a helper of its own) — a timer, an event handler or an
 * immediate the recipe set, whose callback is the bottom of the stack. An error with no stack cannot be told apart.
 */
export function thrownByRecipeCode(error: unknown, dirs: readonly string[]): boolean {
  const outermost = stackFrames(error).at(-1)
  return outermost !== undefined && inRoots(outermost.file, recipeRoots(dirs))
}

/**
 * In the processing thread: an exception that recipe code threw where nothing could catch it — a timer a run left, or
 * one a recipe file's top-level code sets — is logged with where in the recipe it was thrown and counted
 * (`switchboard_recipe_uncaught_errors_total`), and the thread goes on. It ended the thread, which was restarted — and
 * a file whose top-level code set such a timer ended every restarted thread again as it loaded, so no event was
 * processed and no recipe ran until the file was fixed. Nothing of switchboard's was on that stack but what the
 * recipe's callback called. Any other exception still ends the thread, which is restarted (src/processing-host.ts).
 */
export function logUncaughtRecipeErrors(rt: { log: Logger; metrics: Registry }, dirs: readonly string[]): () => void {
  const counter = new Counter({ name: 'switchboard_recipe_uncaught_errors_total', help: 'Exceptions recipe code threw where nothing could catch them (a timer it did not wait for): logged, the processing thread keeps running.', registers: [rt.metrics] })
  const onException = (error: unknown) => {
    if (!thrownByRecipeCode(error, dirs)) throw error
    counter.inc()
    rt.log.error({ err: error }, `recipe code threw where nothing could catch it (a timer or callback it did not wait for)${recipeFrame(error, dirs)}; logged, processing goes on — catch the error in that callback`)
  }
  process.on('uncaughtException', onException)
  return () => process.off('uncaughtException', onException)
}
