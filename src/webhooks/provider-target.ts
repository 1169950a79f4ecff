import type { Runtime } from '../runtime.ts'

const DEFAULT_PROVIDER_TARGET = 'formant'

/** Events of targets whose scheme is the provider's (the default `formant` target, or a named one) are provider events. */
export function isProviderTarget(rt: Runtime, target: string): boolean {
  const configured = rt.config.webhook.targets[target]
  return configured ? configured.scheme === 'formant' : target === DEFAULT_PROVIDER_TARGET
}

/** Every target whose events are the provider's: the default one and each named target of the provider's scheme. */
export function providerTargetNames(rt: Runtime): string[] {
  return [...new Set([DEFAULT_PROVIDER_TARGET, ...Object.keys(rt.config.webhook.targets)])].filter((name) => isProviderTarget(rt, name))
}

/**
 * Whether a stored event came from a named target of another scheme (a CRM's Standard Webhooks, say) rather than from
 * the provider: its body is that sender's own, and the provider's read model leaves it alone.
 */
export function isNamedTargetEvent(rt: Runtime, row: { source: string; target: string }): boolean {
  return row.source !== 'reconcile' && !isProviderTarget(rt, row.target)
}
