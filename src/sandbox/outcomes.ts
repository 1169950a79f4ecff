import type { RetryContext, TerminalStatus, TranscriptTurn } from '../upstream/schemas.ts'
import type { Random } from '../utils/random.ts'

/**
 * The deterministic outcome table (DESIGN.md → Sandbox provider), by the destination's last digit:
 * 0–4 completed; 5 no_answer on a first attempt, completed on a follow-up; 6 busy; 7 failed;
 * 8 unreachable; 9 socket_failure, except …99 telephony_failed. What is not a phone number at all (letters, fewer
 * than three digits: `abc`, `+1`) cannot be dialled: unreachable, never a completed call with a transcript.
 */
export function outcomeFor(phone: string, followUp: boolean): TerminalStatus {
  const digits = phone.replace(/\D/g, '')
  if (!/^\+?[\d\s().-]+$/.test(phone.trim()) || digits.length < 3) return 'unreachable'
  const last = digits.at(-1)!
  switch (last) {
    case '5':
      return followUp ? 'completed' : 'no_answer'
    case '6':
      return 'busy'
    case '7':
      return 'failed'
    case '8':
      return 'unreachable'
    case '9':
      return digits.endsWith('99') ? 'telephony_failed' : 'socket_failure'
    default:
      return 'completed'
  }
}

/** Platform retries (agent setting) cover these outcomes only (provider-notes → Webhooks). */
export const PLATFORM_RETRY_STATUSES: readonly TerminalStatus[] = ['busy', 'no_answer', 'failed']

export const FAILURE_REASONS: Record<TerminalStatus, string | null> = {
  completed: null,
  no_answer: 'no answer within 30 seconds of ringing',
  busy: 'callee line busy',
  failed: 'call setup failed: SIP 503 service unavailable',
  unreachable: 'destination number unreachable',
  socket_failure: 'voice stream disconnected after the call connected',
  telephony_failed: 'telephony provider reported an error after initiation',
}

/**
 * Simulated timeline, in simulated seconds from initiation (divided by SANDBOX_SPEED for real time).
 * `ringingAt` / `answeredAt` are undefined when the call never reaches that state.
 */
export interface Timeline {
  ringingAt: number | undefined
  answeredAt: number | undefined
  endsAt: number
  /** Billable seconds: from answer to end. */
  durationSeconds: number
}

export function timelineFor(status: TerminalStatus, random: Random): Timeline {
  switch (status) {
    case 'completed': {
      const talk = 20 + Math.floor(random.next() * 100)
      return { ringingAt: 1, answeredAt: 5, endsAt: 5 + talk, durationSeconds: talk }
    }
    case 'no_answer':
      return { ringingAt: 1, answeredAt: undefined, endsAt: 31, durationSeconds: 0 }
    case 'busy':
      return { ringingAt: 1, answeredAt: undefined, endsAt: 3, durationSeconds: 0 }
    case 'failed':
      return { ringingAt: undefined, answeredAt: undefined, endsAt: 1, durationSeconds: 0 }
    case 'unreachable':
      return { ringingAt: undefined, answeredAt: undefined, endsAt: 2, durationSeconds: 0 }
    case 'socket_failure':
      return { ringingAt: 1, answeredAt: 5, endsAt: 13, durationSeconds: 8 }
    case 'telephony_failed':
      return { ringingAt: 1, answeredAt: undefined, endsAt: 6, durationSeconds: 0 }
  }
}

/** What a completed call "said", by the last digit: each shape a recipe may want to react to. */
const SCRIPTS: Record<string, { intent: string; extra: Record<string, unknown>; human: string[] }> = {
  '0': { intent: 'interested', extra: { interested: true }, human: ['Yes, speaking.', 'Sure, that sounds good. Please go ahead.'] },
  '1': {
    intent: 'callback_requested',
    extra: { callback_requested: true, callback_time: 'tomorrow 10:00' },
    human: ['Hello?', 'I am driving right now, can you call me back tomorrow at ten?'],
  },
  '2': { intent: 'not_interested', extra: { interested: false }, human: ['Yes?', 'No, I am not interested, thank you.'] },
  '3': {
    intent: 'do_not_call',
    extra: { do_not_call: true },
    human: ['Who is this?', 'Please do not call this number again.'],
  },
  '4': {
    intent: 'payment_promised',
    extra: { payment_promised: true, promised_amount: '2500', promised_date: 'next Friday' },
    human: ['Hi, yes.', 'I will pay 2500 by next Friday.'],
  },
  // A follow-up that finally reached a number ending in 5.
  '5': { intent: 'interested', extra: { interested: true, reached_on_follow_up: true }, human: ['Hello, sorry I missed your call.', 'Yes, go ahead.'] },
}

export interface CallContent {
  results: Record<string, unknown>
  transcript: TranscriptTurn[] | undefined
}

/** Transcript and results for a call's outcome; only completed calls have either. */
export function contentFor(input: {
  status: TerminalStatus
  phone: string
  parameters: Record<string, string>
  retryContext: RetryContext | undefined
  durationSeconds: number
}): CallContent {
  if (input.status !== 'completed') return { results: {}, transcript: undefined }
  const last = input.phone.replace(/\D/g, '').at(-1) ?? '0'
  const script = SCRIPTS[last] ?? SCRIPTS['0']!
  const name = input.parameters.customer_name ?? input.parameters.name
  const opening =
    input.retryContext?.retry_initial_message ??
    `Hello${name ? ` ${name}` : ''}, this is an automated assistant calling on behalf of our team.`
  const transcript: TranscriptTurn[] = [
    { role: 'agent', message: opening },
    { role: 'human', message: script.human[0]! },
    { role: 'agent', message: 'Thank you. I am calling about your account. Is now a good time?' },
    { role: 'human', message: script.human[1]! },
    { role: 'agent', message: 'Noted. Thank you for your time, goodbye.' },
  ]
  const results: Record<string, unknown> = {
    intent: script.intent,
    ...script.extra,
    summary: `Customer said: "${script.human[1]}"`,
    language: input.retryContext?.retry_language ?? 'en-IN',
  }
  if (input.retryContext?.collected_data) results.collected_data = input.retryContext.collected_data
  return { results, transcript }
}
