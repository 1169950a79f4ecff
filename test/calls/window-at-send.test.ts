import { expect, it } from 'vitest'
import { requestInWindow, windowColumn } from '../../src/calls/window-at-send.ts'

const india = windowColumn({ timeZone: 'Asia/Kolkata', start: '09:00', end: '21:00' })
const request = (scheduledFor?: string) => ({ agent_id: 101, idempotency_key: 'k', parameters: [{ name: 'customer_phone', value: '+919876543210' }], ...(scheduledFor ? { scheduled_for: scheduledFor } : {}) })

it('leaves a call inside its window as it is', () => {
  const now = Date.parse('2026-03-01T10:00:00Z') // 15:30 in India
  expect(requestInWindow(request(), india, now)).toEqual({ request: request() })
  expect(requestInWindow(request('2026-03-01T12:00:00Z'), india, now)).toEqual({ request: request('2026-03-01T12:00:00Z') })
})

it('moves a call due outside its window to the next opening, in the recipient\'s zone', () => {
  const now = Date.parse('2026-03-01T16:00:00Z') // 21:30 in India
  expect(requestInWindow(request(), india, now)).toEqual({ request: request('2026-03-02T03:30:00.000Z'), movedTo: Date.parse('2026-03-02T03:30:00Z') })
  // A scheduled time that has slipped past while the call waited is judged at the moment of sending.
  expect(requestInWindow(request('2026-03-01T15:00:00Z'), india, now).request.scheduled_for).toBe('2026-03-02T03:30:00.000Z')
})

it('turns a scheduled time that slipped into the past, inside the window, into an immediate call', () => {
  const now = Date.parse('2026-03-01T10:00:00Z')
  expect(requestInWindow(request('2026-03-01T09:00:00Z'), india, now)).toEqual({ request: request() })
})

it('sends a call without a stored window (or with one no version wrote) as it is', () => {
  const now = Date.parse('2026-03-01T16:00:00Z')
  expect(requestInWindow(request(), null, now)).toEqual({ request: request() })
  expect(requestInWindow(request(), '{not json', now)).toEqual({ request: request() })
  expect(requestInWindow(request(), '{"timeZone":"Not/AZone","start":"09:00","end":"21:00"}', now)).toEqual({ request: request() })
})

// "Due within a minute" was sent at once when that minute was before the opening: the provider rang at 08:59:30 local.
it('a call reaching the front less than a minute before its window opens is scheduled for the opening', () => {
  const now = Date.parse('2026-03-01T03:29:30Z') // 08:59:30 in India
  expect(requestInWindow(request(), india, now)).toEqual({ request: request('2026-03-01T03:30:00.000Z'), movedTo: Date.parse('2026-03-01T03:30:00Z') })
})
