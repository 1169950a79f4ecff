import { describe, expect, it } from 'vitest'
import { validateCallRequest } from '../../src/calls/validate-call.ts'

const now = Date.parse('2026-03-18T20:53:30Z')
const call = (extra: Record<string, unknown> = {}) => ({ agent_id: 101, parameters: [{ name: 'customer_phone', value: '+919876543210' }], ...extra })

describe('validateCallRequest', () => {
  it('accepts a valid request and keeps the fields the spec does not list (a drop-in proxy forwards them as sent)', () => {
    const result = validateCallRequest(call({ metadata: { a: 'b' }, retry_context: { collected_data: { x: 1 } }, from_phone_number: '+918000000000' }), now)
    expect(result).toEqual({ ok: true, request: { agent_id: 101, parameters: [{ name: 'customer_phone', value: '+919876543210' }], metadata: { a: 'b' }, retry_context: { collected_data: { x: 1 } }, from_phone_number: '+918000000000' } })
    const parameter = validateCallRequest(call({ parameters: [{ name: 'customer_phone', value: '+919876543210', sensitive: true }] }), now)
    expect(parameter.ok && parameter.request.parameters[0]).toEqual({ name: 'customer_phone', value: '+919876543210', sensitive: true })
    expect(validateCallRequest(call({ scheduled_for: null }), now).ok).toBe(true)
  })

  it.each([
    ['2026-03-18T20:52:31Z', true], // within the minute of skew
    ['2026-03-18T20:52:29Z', false],
    ['2026-04-17T20:53:30Z', true], // exactly 30 days
    ['2026-04-17T20:53:31Z', false],
    ['2026-03-20T10:00:00+05:30', true],
    ['2026-03-20T10:00:00', false], // no time zone
    ['2026-02-30T10:00:00Z', false],
    ['2026-02-29T10:00:00Z', false], // 2026 is no leap year: Date.parse reads March 1st
    ['2026-04-31T10:00:00+05:30', false],
    ['2026-03-20T24:00:00Z', false],
    ['2026-03-20T10:00:00+24:00', false],
  ])('scheduled_for %s → ok %s', (at, ok) => {
    expect(validateCallRequest(call({ scheduled_for: at }), now).ok).toBe(ok)
  })

  it.each([
    [null, 'request body must be a JSON object'],
    [[call()], 'request body must be a JSON object'],
    [{ parameters: [] }, 'agent_id is required'],
    [call({ agent_id: '101' }), 'agent_id must be an integer'],
    [call({ agent_id: 1.5 }), 'agent_id must be an integer'],
    [call({ parameters: [{ name: 'customer_phone', value: '  ' }] }), 'customer_phone parameter is required'],
    [call({ parameters: [{ name: 'customer_phone' }] }), 'parameters[0] must be an object with string name and value'],
    [call({ conversation_id: 7 }), 'conversation_id must be a string'],
    [call({ idempotency_key: '' }), 'idempotency_key must be a non-empty string'],
    [call({ retry_context: 'again' }), 'retry_context must be an object'],
    [call({ retry_context: { retry_language: 5 } }), 'retry_context.retry_language must be a string'],
    [call({ scheduled_for: 1773867210000 }), 'scheduled_for must be an ISO 8601 datetime with a time zone'],
  ])('%j → %s', (body, message) => {
    expect(validateCallRequest(body, now)).toEqual({ ok: false, message })
  })
})
