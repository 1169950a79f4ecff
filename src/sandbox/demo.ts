/** The sandbox's demo workspaces (DESIGN.md → Sandbox provider). */
export interface DemoAgent {
  id: number
  name: string
  /** null: "agent has no phone number configured" */
  fromPhone: string | null
  /** Platform-side retries for busy / no_answer / failed attempts. */
  platformRetries: { enabled: boolean; maxAttempts: number }
}

export interface DemoTenant {
  id: string
  name: string
  apiKey: string
  disabled: boolean
  agents: DemoAgent[]
}

export const DEMO_TENANTS: DemoTenant[] = [
  {
    id: 'acme',
    name: 'Acme Collections',
    apiKey: 'sk_test_acme',
    disabled: false,
    agents: [
      { id: 101, name: 'Acme outbound', fromPhone: '+918035550101', platformRetries: { enabled: false, maxAttempts: 1 } },
      { id: 102, name: 'Acme draft (no number)', fromPhone: null, platformRetries: { enabled: false, maxAttempts: 1 } },
      { id: 103, name: 'Acme with platform retries', fromPhone: '+918035550103', platformRetries: { enabled: true, maxAttempts: 3 } },
    ],
  },
  {
    id: 'globex',
    name: 'Globex Support',
    apiKey: 'sk_test_globex',
    disabled: false,
    agents: [{ id: 201, name: 'Globex outbound', fromPhone: '+14155550201', platformRetries: { enabled: false, maxAttempts: 1 } }],
  },
  { id: 'disabled', name: 'Disabled workspace', apiKey: 'sk_test_disabled', disabled: true, agents: [] },
]

/** switchboard's own workspace key in sandbox mode is the first tenant's (kept with the configuration it completes). */
export { SANDBOX_WORKSPACE_KEY } from '../config/workspace-key.ts'
