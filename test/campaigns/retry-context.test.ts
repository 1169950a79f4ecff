import { expect, it } from 'vitest'
import { buildRetryContext } from '../../src/campaigns/retry-context.ts'

it('leaves out what has no value — collected_data too — rather than sending it empty', () => {
  // A follow-up of a call with no parameters beyond the phone, no results and no earlier context went out with
  // `"retry_context":{"collected_data":{}}` (a recipe author's probe), though the doc said empty fields are left out.
  expect(buildRetryContext({ status: 'no_answer', results: null, parameters: { customer_phone: '+919876543210' }, previous: null })).toEqual({})
  expect(buildRetryContext({ status: 'no_answer', results: { intent: '' }, parameters: { customer_phone: '+919876543210', name: 'Asha' }, previous: null })).toEqual({ collected_data: { name: 'Asha' } })
})
