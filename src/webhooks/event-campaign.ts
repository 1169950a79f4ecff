/**
 * A provider event's campaign for its log lines: the `campaign` call parameter of its `data.call` (a batch's column,
 * a recipe's call), if any. From the parsed call (the receiver) or the stored body (processing, read only when a line
 * is written).
 */
export function campaignOfCall(call: unknown): string | undefined {
  const parameters = typeof call === 'object' && call !== null ? (call as { call_parameters?: unknown }).call_parameters : undefined
  const campaign = typeof parameters === 'object' && parameters !== null ? (parameters as { campaign?: unknown }).campaign : undefined
  return typeof campaign === 'string' && campaign ? campaign : undefined
}

export function campaignOfBody(body: string): string | undefined {
  if (!body.includes('"campaign"')) return undefined
  try {
    return campaignOfCall((JSON.parse(body) as { data?: { call?: unknown } } | null)?.data?.call)
  } catch {
    return undefined
  }
}
