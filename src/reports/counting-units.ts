/**
 * What the report counts, said where it could be misread. The report's calls are attempts (the spec's "call: one attempt
 * to reach one phone number"; every conversation, platform retries included), while the provider's batch metrics count
 * recipients (success_rate = success_count / total_recipients). For a batch the platform retried the two rates differ —
 * 30 % of 20 attempts, 60 % of 10 contacts — and both are right; unlabelled, one mail gave two "success" rates for one
 * campaign.
 */
export const CALLS_ARE_ATTEMPTS = 'calls are attempts: a contact the platform retried counts once per attempt'
export const BATCHES_PER_RECIPIENT = 'counted per recipient: each contact once, whatever its attempts'
