import type { ColumnType, Generated } from 'kysely'

/**
 * The database, typed for kysely. Portable by construction: times are epoch milliseconds (BIGINT),
 * booleans are 0/1 integers, JSON is stored as text, and ids are text or integers we assign — so the same
 * queries run on SQLite and Postgres. Column comments say who owns the table.
 */

/** Webhook inbox (receiver). One row per event id, inserted before the 2xx. */
export interface WebhookEventsTable {
  event_id: string
  target: string
  event_type: string
  conversation_id: string | null
  trace_id: string | null
  agent_id: number | null
  /** The raw body as received (UTF-8). */
  body: string
  /** JSON object of the headers kept for audit (never the signature). */
  headers: string
  /** 'webhook' for deliveries, 'reconcile' for events synthesized by reconciliation. */
  source: string
  received_at: number
  /** pending | processed | failed | dead */
  status: string
  attempts: number
  next_attempt_at: number
  /** Claim for processing: the worker id and when its claim lapses. */
  claimed_by: string | null
  claimed_until: number | null
  last_error: string | null
  processed_at: number | null
  /** Copies delivered again after the first (0002_webhooks_stats). */
  duplicates: Generated<number>
}

/** Rejected deliveries per minute, target and reason (receiver; the daily report's webhook health). */
export interface WebhookRejectionsTable {
  /** Start of the minute, epoch ms. */
  bucket_at: number
  target: string
  reason: string
  count: number
}

/** Conversations read model (receiver, reconciliation). */
export interface ConversationsTable {
  conversation_id: string
  agent_id: number
  contact_number: string | null
  /**
   * The contact as one value whatever the spelling (src/campaigns/contact-key.ts): E.164 when the number reads as one in
   * DEFAULT_COUNTRY, else `contact_number` as written. Null with no number, and on rows a version before 0.27.0 wrote
   * until the periodic fill reaches them (src/campaigns/contact-key-fill.ts).
   */
  contact_key: string | null
  status: string
  /** 1 once the status is terminal; never goes back to 0. */
  terminal: number
  duration_seconds: number | null
  started_at: number | null
  ended_at: number | null
  failure_reason: string | null
  trace_id: string | null
  from_phone: string | null
  recording_url: string | null
  /** JSON array of {role, message}. */
  transcript: string | null
  /** JSON objects. */
  results: string | null
  call_parameters: string | null
  retry: string | null
  retry_context: string | null
  /** Event time (ms) of the newest fact applied; older facts never overwrite newer ones. */
  last_event_at: number
  last_event_id: string | null
  /** 'webhook' | 'reconcile' */
  source: string
  created_at: number
  updated_at: number
}

/** Calls switchboard placed or scheduled (proxy, recipes). Also the local 24 h idempotency record. */
export interface CallsTable {
  id: string
  tenant: string
  agent_id: number
  customer_phone: string
  /** `customer_phone` as one value whatever the spelling (as `conversations.contact_key`); null on older versions' rows until filled. */
  customer_key: string | null
  idempotency_key: string
  trace_id: string | null
  conversation_id: string | null
  /** The conversation this call follows up (chain continued with conversation_id). */
  previous_conversation_id: string | null
  scheduled_for: number | null
  /** JSON array of {name, value}. */
  parameters: string
  retry_context: string | null
  metadata: string | null
  /** recipe name, or null for calls that came through the proxy */
  recipe: string | null
  /** campaign label (batch name or recipe campaign) */
  campaign: string | null
  /** pending | initiated | scheduled | failed | rejected */
  status: string
  error: string | null
  created_at: number
  updated_at: number
}

/** Proxy JSON cache, shared by replicas. */
export interface CacheEntriesTable {
  key: string
  tenant: string
  /** conversation | conversation_list | batch | batch_list | batch_metrics | transcription | not_found */
  kind: string
  /** conversation id, batch id or job id the entry is about (for invalidation) */
  resource_id: string | null
  agent_id: number | null
  status: number
  headers: string
  body: string
  size: number
  stored_at: number
  expires_at: number
  last_access_at: number
}

/** When a tenant's key was last confirmed by the provider (proxy). Keyed by a hash, never the key. */
export interface TenantKeysTable {
  tenant: string
  accepted_at: number | null
  rejected_at: number | null
}

/** Recordings cached on disk (proxy); the file name is a content hash. */
export interface RecordingsTable {
  key: string
  tenant: string
  conversation_id: string
  file: string
  content_type: string
  /** JSON object of the provider's headers replayed with the file (Content-Disposition, Cache-Control); null before 0003. */
  headers: string | null
  size: number
  stored_at: number
  last_access_at: number
}

/** Recipe runs (recipes engine). */
export interface RecipeRunsTable {
  id: string
  recipe: string
  /** cron | event | manual | catchup */
  trigger: string
  event_id: string | null
  dry_run: number
  /** running | succeeded | failed | skipped */
  status: string
  started_at: number
  ended_at: number | null
  summary: string | null
  /** JSON: the side effects planned (dry run) or performed. */
  plan: string | null
  error: string | null
  /** The process running it (src/utils/process-identity.ts), null where it cannot be identified or a previous version wrote the row. */
  process: string | null
}

/** One row per (recipe, tick): whoever inserts it runs that tick, on any replica. */
export interface RecipeTicksTable {
  recipe: string
  tick_at: number
  owner: string
  claimed_at: number
}

/**
 * One row per (recipe, event): event triggers fire once per event even if it is delivered again. Also the
 * recipe's queue of events to run on (0003): claimed in batches like webhook events.
 */
export interface RecipeEventFiresTable {
  recipe: string
  event_id: string
  /** When the event was queued for the recipe. */
  fired_at: number
  /** pending | failed (due again at next_attempt_at) | done | dead */
  status: Generated<string>
  attempts: Generated<number>
  next_attempt_at: Generated<number>
  claimed_by: string | null
  claimed_until: number | null
  /** The run that completed it. */
  run_id: string | null
  last_error: string | null
}

/** Calls waiting to be sent to the provider (0003): the paced outbound queue; the ledger row shares the id. */
export interface CallQueueTable {
  /** calls.id */
  id: string
  tenant: string
  /** JSON CallRequest, idempotency key included. */
  request: string
  attempts: number
  next_attempt_at: number
  claimed_by: string | null
  claimed_until: number | null
  enqueued_at: number
  last_error: string | null
  /**
   * JSON `{ timeZone, start, end }`: the recipient's calling window, checked again when the call is sent
   * (null: none — a row a previous version queued).
   */
  calling_window: string | null
}

/** Small persisted key/value state per namespace (recipes' ctx.state). */
export interface KvStateTable {
  namespace: string
  key: string
  /** JSON */
  value: string
  updated_at: number
}

/** Do-not-call list, E.164 numbers. */
export interface DncTable {
  phone: string
  reason: string | null
  source: string | null
  added_at: number
}

/** Every mail send attempt (reports). */
export interface MailLogTable {
  id: string
  message_id: string | null
  recipients: string
  subject: string
  /** queued | sent | failed | written */
  status: string
  attempts: number
  error: string | null
  created_at: number
  updated_at: number
  /** The RFC 822 bytes while the message waits for delivery (SMTP); cleared once sent (0004_mail_outbox). */
  raw: string | null
  /** When the outbox tries a queued message next (epoch ms). */
  next_attempt_at: number | null
  /** The process delivering it right now, and when that claim lapses. */
  claimed_by: string | null
  claimed_until: number | null
}

/**
 * The runtimes of `serve` now running (0011): each registers on start and leaves on a clean stop, so one that
 * was killed can be recognised and its claims given back at once (src/instances.ts).
 */
export interface InstancesTable {
  /** The runtime's instance id: its claims are `<id>:<worker>`, its leases `<id>`. */
  id: string
  /** The process's exact identity (src/utils/process-identity.ts): `<boot>/<pid namespace>/<pid>/<start>`. */
  process: string
  host: string
  started_at: number
}

/** Dashboard sessions ended by "Log out", kept until they would have expired (0019). */
export interface RevokedSessionsTable {
  nonce: string
  expires_at: number
}

/** Named leases for jobs that one replica at a time should run (reconcile, purge). */
export interface LeasesTable {
  name: string
  owner: string
  expires_at: number
}

/** Forwarding outbox (src/destinations): one row per (event, destination), written with the event's outcome. */
export interface DestinationDeliveriesTable {
  /** Stable per event and destination; sent as `webhook-id`, so receivers dedupe retries and replays. */
  id: string
  destination: string
  event_id: string
  event_type: string
  conversation_id: string | null
  /**
   * The body's copy in rows written before migration 0009; '' in rows written since (the body is in
   * `destination_payloads`). The narrow-rows change is an expand/contract over several releases (README →
   * Rolling deploys): 0009 wrote both and read the table; 0.2.0 and 0.3.0 write '' here; dropping the column
   * waits for a release that gives it a default and stops naming it.
   */
  payload: string
  /** Delivery order within a conversation: the event's receipt time (epoch ms) × 1000 + its place in its batch. */
  order_at: number
  /**
   * 1 when the delivery takes part in its conversation's order (its destination is `ordered`), else 0. Only the
   * pending rows with a 1 are in the ordering index (migration 0013): a destination that does not order pays no
   * index write for it. Rows a release before 0013 wrote get 1 (the column's default): ordered, as they were.
   * Optional on insert only because of that default; this release always sets it (src/destinations/outbox.ts).
   */
  ordered: ColumnType<number, number | undefined, number>
  /** pending | delivered | dead */
  status: string
  /** Attempts in all (history) and in the current round (the retry schedule restarts on replay). */
  attempts: number
  round_attempts: number
  next_attempt_at: number
  claimed_by: string | null
  claimed_until: number | null
  last_status: number | null
  last_error: string | null
  created_at: number
  delivered_at: number | null
}

/**
 * The exact JSON body of an event sent to destinations, once per event however many destinations it goes
 * to. Kept apart from the delivery rows, which are rewritten on every claim and outcome: rows of a few
 * hundred bytes instead of the body's kilobyte are most of the outbox's write cost.
 */
export interface DestinationPayloadsTable {
  event_id: string
  payload: string
  created_at: number
}

/** Every attempt of a delivery (src/destinations): kept for dead letters and for the record. */
export interface DestinationAttemptsTable {
  delivery_id: string
  attempt: number
  started_at: number
  latency_ms: number
  /** HTTP status, or null when no answer came (timeout, refused, blocked address). */
  status: number | null
  /** delivered | retry | dead | disabled */
  result: string
  error: string | null
  /** The first KB of the response body. */
  response: string | null
}

/** Per-destination state shared by replicas (src/destinations): disabled after a 410 until re-enabled. */
export interface DestinationStateTable {
  name: string
  disabled_at: number | null
  disabled_reason: string | null
}

export interface Database {
  webhook_events: WebhookEventsTable
  webhook_rejections: WebhookRejectionsTable
  conversations: ConversationsTable
  calls: CallsTable
  cache_entries: CacheEntriesTable
  tenant_keys: TenantKeysTable
  recordings: RecordingsTable
  recipe_runs: RecipeRunsTable
  recipe_ticks: RecipeTicksTable
  recipe_event_fires: RecipeEventFiresTable
  call_queue: CallQueueTable
  kv_state: KvStateTable
  dnc: DncTable
  mail_log: MailLogTable
  leases: LeasesTable
  instances: InstancesTable
  revoked_sessions: RevokedSessionsTable
  destination_deliveries: DestinationDeliveriesTable
  destination_payloads: DestinationPayloadsTable
  destination_attempts: DestinationAttemptsTable
  destination_state: DestinationStateTable
}

export type { Generated }
