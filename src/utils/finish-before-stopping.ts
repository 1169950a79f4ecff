/**
 * Runs `work` with Ctrl-C (SIGINT) and SIGTERM held off while it runs: the first says `first` and waits for `work` to
 * end; another ends the process at once (exit 130) after saying `second`. For a command whose work cannot be cut short
 * without harm: a report in the relay's hands, stopped, is neither known sent nor unsent — the running service sends it
 * again once the command's claim lapses, and the relay may deliver both. The handlers are removed when `work` ends.
 */
export async function finishBeforeStopping<T>(work: () => Promise<T>, say: (text: string) => void, lines: { first: string; second: string }): Promise<T> {
  const signals: NodeJS.Signals[] = ['SIGINT', 'SIGTERM']
  let count = 0
  const onSignal = () => {
    // On Ctrl-C the terminal signals the whole process group and npm forwards the same signal again: the two
    // arrive together, and only a third means "stop now".
    count++
    if (count === 1) say(lines.first)
    else if (count >= 3 || !launchedByNpm()) {
      say(lines.second)
      process.exit(130)
    }
  }
  for (const s of signals) process.on(s, onSignal)
  try {
    return await work()
  } finally {
    for (const s of signals) process.off(s, onSignal)
  }
}

/** npm (`npm run -s cli -- …`) forwards the terminal's signal to the command: each Ctrl-C arrives twice. */
function launchedByNpm(): boolean {
  return process.env.npm_lifecycle_event !== undefined
}
