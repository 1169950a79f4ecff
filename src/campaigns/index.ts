/**
 * The campaign toolkit: phone numbers, contact CSVs in and out, dedupe, do-not-call, rejects, batch
 * launch, calling windows, and follow-ups (plan, then schedule). Recipes get it as `ctx.campaigns`,
 * bound to the runtime and the run's effects; everything here is also usable on its own.
 */
export { normalizePhone, createPhoneNormalizer, countryOfPhone, type PhoneResult, type PhoneOptions, type PhoneNormalizer } from './phones.ts'
export {
  readContacts,
  findPhoneColumn,
  headerKey,
  ContactsError,
  PHONE_COLUMN,
  PHONE_ALIASES,
  type ContactRow,
  type ContactsSource,
  type ReadContactsOptions,
} from './read-contacts.ts'
export { batchCsv, batchColumns, writeBatchCsv, type BatchRow } from './batch-csv.ts'
export { createDeduper, dedupeBy, type Deduper } from './dedupe.ts'
export {
  loadDncList,
  isBlocked,
  addToDnc,
  removeFromDnc,
  readDncFile,
  defaultDncFile,
  asksNotToCall,
  optOutFromEvent,
  type DncList,
  type DncOptions,
} from './dnc.ts'
export { rejectsCsv, writeRejectsCsv, type Reject } from './rejects.ts'
export { prepareContacts, prepareBatch, REJECT_REASONS, type PreparedBatch, type PrepareOptions } from './prepare-batch.ts'
export { launchBatch, type LaunchBatchInput, type LaunchBatchResult } from './launch-batch.ts'
export {
  DEFAULT_WINDOW,
  nextCallingTime,
  isWithinWindow,
  localTime,
  zonedTimeToEpoch,
  countryTimeZone,
  timeZoneForPhone,
  isValidTimeZone,
  type CallingWindow,
} from './calling-window.ts'
export { buildRetryContext, type RetryContextOptions, type RetryContextSource } from './retry-context.ts'
export { deterministicKey, followUpKey } from './idempotency-key.ts'
export {
  planFollowUps,
  DEFAULT_FOLLOW_UP,
  TECHNICAL_FAILURES,
  type FollowUpInput,
  type FollowUpOptions,
  type FollowUpPlan,
  type FollowUpSkip,
  type FollowUpResult,
  type FollowUpStatus,
  type ConversationInput,
  type CallInput,
  type SkipCode,
} from './plan-follow-ups.ts'
export { scheduleCall, scheduleCalls, type CallPlan, type NewCall, type ScheduleCallOptions, type ScheduleCallOutcome } from './schedule-call.ts'
export { runFollowUps, loadFollowUpInputs, type RunFollowUpsOptions, type RunFollowUpsResult } from './follow-ups.ts'
