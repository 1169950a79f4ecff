import type { Runtime } from '../runtime.ts'
import type { Effects } from '../utils/effects.ts'

// Interim: filled in from src/campaigns and src/reports as those modules land.
export type RecipeCampaigns = Record<string, never>
export type RecipeReports = Record<string, never>
export interface RecipeMail {
  send(message: { to: string[]; subject: string; text?: string; html?: string }): Promise<void>
}

export interface Bindings {
  campaigns: RecipeCampaigns
  reports: RecipeReports
  mail: RecipeMail
}

export function createBindings(_rt: Runtime, effects: Effects, _recipe: string): Bindings {
  return {
    campaigns: {},
    reports: {},
    mail: {
      async send(message) {
        effects.plan.push({ kind: 'mail', to: message.to, subject: message.subject })
        if (!effects.dryRun) throw new Error('mail is not available yet')
      },
    },
  }
}
