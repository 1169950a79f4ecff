import type { Random } from '../utils/random.ts'

/** The provider's id formats (provider-notes → Identifiers and formats). */
export function createIds(random: Random) {
  let nextBatchId = 1001
  return {
    traceId: () => random.uuid(),
    /** A new conversation chain; its first attempt is `<uuid>_1`. */
    chainId: () => random.uuid(),
    conversationId: (chain: string, attempt: number) => `${chain}_${attempt}`,
    batchId: () => nextBatchId++,
    jobId: () => `job_${random.hex(8)}`,
    eventId: () => `evt_${random.hex(6)}`,
  }
}
export type Ids = ReturnType<typeof createIds>

/** Splits `<uuid>_<n>` into chain and attempt; undefined for anything else. */
export function parseConversationId(id: string): { chain: string; attempt: number } | undefined {
  const match = /^(.+)_(\d+)$/.exec(id)
  if (!match) return undefined
  return { chain: match[1]!, attempt: Number(match[2]) }
}
