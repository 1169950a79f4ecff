/**
 * Notices after an action travel as a code in the redirect (`?done=…&n=…`), never as text from the URL,
 * so a crafted link cannot put words on the page.
 */
const MESSAGES: Record<string, (n: string | null, s: string | null, count: (key: string) => string) => string> = {
  'replayed-one': (_n, s) =>
    s === 'queued' ? 'Queued for the workers: none has processed it yet (is a worker running?).' : `Replayed: the event is now ${s ?? 'processed'}.`,
  'replay-busy': () => 'That event is being processed right now; try again in a minute.',
  'requeued': (n) => `Queued ${n ?? 0} failed or dead event(s) for processing again.`,
  'dnc-added': (n, _s, count) =>
    n !== '1'
      ? 'That number was already on the list.'
      : count('k') === '0'
        ? 'Added to the do-not-call list.'
        : `Added to the do-not-call list. ${count('k')} call(s) to it were already scheduled with the provider, which its API cannot cancel: cancel them in the provider's dashboard (the Calls page lists them as scheduled).`,
  'dnc-removed': (n) => (n === '1' ? 'Removed from the do-not-call list.' : 'That number was not on the list.'),
  'dnc-invalid': () => 'That is not a phone number.',
  'dnc-imported': (n, _s, count) => `Imported: ${n ?? 0} added, ${count('e')} already listed, ${count('x')} row(s) with errors.`,
  'delivery-queued': (n, _s, count) =>
    count('w') === '1'
      ? `Queued ${n ?? 0} deliver${n === '1' ? 'y' : 'ies'} to be sent again, but the destination is disabled (it answered 410 Gone): ${n === '1' ? 'it goes' : 'they go'} out once it is enabled.`
      : `Queued ${n ?? 0} deliver${n === '1' ? 'y' : 'ies'} to be sent again (by the running service, with the same webhook-id).`,
  'delivery-busy': () => 'That delivery is being sent right now; try again in a minute.',
  'destination-enabled': (n) => (n === '1' ? 'Enabled: its waiting deliveries go out.' : 'That destination was neither disabled nor paused.'),
  'destination-resumed': () => 'Pause ended: its next delivery goes out as a probe within 5 s (failing, it is paused again).',
  'destination-discarded': (n) => `Discarded ${n ?? 0} deliver${n === '1' ? 'y' : 'ies'} of a destination no longer configured.`,
  'destination-discarding': () =>
    'Discarding the deliveries of a destination no longer configured: it goes on in the background, paced so webhooks keep being stored (a few hundred a second). Reload to see what is left; the log says when it is done.',
  'recipe-retried': (n) => `Queued ${n ?? 0} event(s) again: the running service runs them within a second, each once.`,
  'recipe-queue-discarded': (n) => `Gave up ${n ?? 0} event(s) that waited for a removed recipe.`,
  'resent': (_n, s) => `Report sent again: ${s ?? 'done'}.`,
  'resend-failed': (_n, s) => `Resend failed: ${s === 'failed' ? 'the mail could not be delivered' : 'only daily reports can be resent'}.`,
}

const STATUS_WORDS = new Set(['processed', 'failed', 'dead', 'pending', 'sent', 'written', 'queued'])

export function flashMessage(params: URLSearchParams): string | null {
  const code = params.get('done')
  // Own keys only: a code such as `toString` or `__proto__` is Object.prototype's, not a notice.
  const make = code && Object.hasOwn(MESSAGES, code) ? MESSAGES[code] : undefined
  if (!make) return null
  const digits = (key: string) => {
    const value = params.get(key)
    return value && /^\d+$/.test(value) ? value : null
  }
  const s = params.get('s')
  return make(digits('n'), s && STATUS_WORDS.has(s) ? s : null, (key) => digits(key) ?? '0')
}
