import { didYouMean } from '../utils/did-you-mean.ts'

/** WEBHOOK_TARGETS as far as a `<target>:<type>` entry cares: each named target's scheme. */
export type WebhookTargets = Readonly<Record<string, { scheme: string }>>

/** Why a `<target>:<type>` entry can match nothing: the provider's target named, or no target of that name. */
export type TargetEventProblem =
  | { kind: 'provider'; target: string; type: string }
  | { kind: 'unknown'; target: string; type: string; near: string | undefined; configured: string }

/**
 * One rule for every `<target>:<type>` entry — a recipe's `on`, a destination's `events`: the target must be a named one
 * of another scheme than the provider's, whose events (from whichever of its targets) are named by type alone.
 * Undefined when the entry can match; each caller words the problem for its own key.
 */
export function targetEventProblem(entry: string, targets: WebhookTargets): TargetEventProblem | undefined {
  const colon = entry.indexOf(':')
  const target = entry.slice(0, colon)
  const type = entry.slice(colon + 1)
  const own = Object.keys(targets).filter((name) => targets[name]!.scheme !== 'formant')
  if (own.includes(target)) return undefined
  if (target.toLowerCase() === 'formant' || Object.hasOwn(targets, target)) return { kind: 'provider', target, type }
  const configured = own.length ? `WEBHOOK_TARGETS names ${own.map((name) => `"${name}"`).join(', ')}` : 'WEBHOOK_TARGETS names none'
  return { kind: 'unknown', target, type, near: didYouMean(target, own), configured }
}
