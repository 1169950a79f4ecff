/**
 * Resolves on the first SIGINT, SIGTERM or SIGHUP. The handlers stay installed until the returned promise's
 * caller has finished shutting down: on Ctrl-C the terminal signals the whole process group and npm
 * forwards the same signal again, and that second signal must not kill a graceful shutdown half way
 * (Node's default action would). A third signal is taken as "stop now", said on stderr.
 *
 * SIGHUP is what closing the terminal that runs `npm start` sends: it ended the process at once, with no stop and no
 * line anywhere (exit 129) — requests and recipe runs cut, as by a kill -9. switchboard reloads nothing on it.
 */
export function waitForStopSignal(): { stopped: Promise<NodeJS.Signals>; release(): void } {
  const signals: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP']
  let count = 0
  let resolve!: (signal: NodeJS.Signals) => void
  const stopped = new Promise<NodeJS.Signals>((r) => (resolve = r))
  const onSignal = (signal: NodeJS.Signals) => {
    count++
    if (count === 1) resolve(signal)
    // The duplicate from npm's forwarding arrives with the terminal's own; only a third means impatience.
    else if (count >= 3) {
      process.stderr.write(`${signal} (a third stop signal): stopping now, without finishing the stop — what was in flight is taken up again at the next start\n`)
      process.exit(1)
    }
  }
  for (const s of signals) process.on(s, onSignal)
  return {
    stopped,
    release() {
      for (const s of signals) process.off(s, onSignal)
    },
  }
}
