/** `conv_abc_3` → `conv_abc_2`: the conversation a follow-up continued (the provider's chain suffix); none for `_1`. */
export function previousInChain(conversationId: string): string | undefined {
  const match = /^(.*)_(\d+)$/.exec(conversationId)
  if (!match || Number(match[2]) <= 1) return undefined
  return `${match[1]}_${Number(match[2]) - 1}`
}

/** `conv_abc_3` → `{ chain: 'conv_abc', attempt: 3 }`; undefined without the provider's chain suffix. */
export function chainAttempt(conversationId: string): { chain: string; attempt: number } | undefined {
  const match = /^(.*)_(\d+)$/.exec(conversationId)
  return match ? { chain: match[1]!, attempt: Number(match[2]) } : undefined
}
