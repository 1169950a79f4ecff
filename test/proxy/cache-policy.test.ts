import { expect, it } from 'vitest'
import { CACHE_TTL_MS, planCache } from '../../src/proxy/cache-policy.ts'

const conversation = (data: Record<string, unknown>) => planCache({ name: 'conversation', id: 'c_1' }, 200, { data: { agent_id: 101, ...data } }, new URLSearchParams())

it('keeps a finished conversation a day, but a completed one still without its recording only a minute', () => {
  expect(conversation({ status: 'completed', recording_url: 'https://rec.example/c_1.wav' })?.ttlMs).toBe(CACHE_TTL_MS.terminalConversation)
  // The provider adds recording_url when the recording is ready, and sends no webhook for it.
  expect(conversation({ status: 'completed', recording_url: null })?.ttlMs).toBe(60_000)
  expect(conversation({ status: 'completed' })?.ttlMs).toBe(60_000)
  // Calls that never connected have no recording to wait for.
  expect(conversation({ status: 'no_answer', recording_url: null })?.ttlMs).toBe(CACHE_TTL_MS.terminalConversation)
  expect(conversation({ status: 'in_progress' })?.ttlMs).toBe(CACHE_TTL_MS.liveConversation)
})
