/**
 * Resolves on the first SIGINT or SIGTERM. The handlers stay installed until the returned promise's
 * caller has finished shutting down: on Ctrl-C the terminal signals the whole process group and npm
 * forwards the same signal again, and that second signal must not kill a graceful shutdown half way
 * (Node's default action would). A third signal is taken as "stop now".
 */
export function waitForStopSignal(): { stopped: Promise<NodeJS.Signals>; release(): void } {
  const signals: NodeJS.Signals[] = ['SIGINT', 'SIGTERM']
  let count = 0
  let resolve!: (signal: NodeJS.Signals) => void
  const stopped = new Promise<NodeJS.Signals>((r) => (resolve = r))
  const onSignal = (signal: NodeJS.Signals) => {
    count++
    if (count === 1) resolve(signal)
    // The duplicate from npm's forwarding arrives with the terminal's own; only a third means impatience.
    else if (count >= 3) process.exit(1)
  }
  for (const s of signals) process.on(s, onSignal)
  return {
    stopped,
    release() {
      for (const s of signals) process.off(s, onSignal)
    },
  }
}
