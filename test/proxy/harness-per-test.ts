import { afterEach } from 'vitest'
import type { Dialect } from '../../src/db/connect.ts'
import { proxyHarness, type ProxyHarness } from './helpers.ts'
import { scriptedUpstream, type ScriptedUpstream } from './scripted-upstream.ts'

/**
 * A describe block's proxies, one per test and closed after it (with the scripted upstream, when it has one):
 * `scripted(env)` puts a scripted upstream between the proxy and the sandbox (test/proxy/scripted-upstream.ts),
 * `sandboxOnly(options)` points the proxy at the sandbox itself.
 */
export function harnessPerTest(dialect: Dialect): {
  scripted(env?: Record<string, string>): Promise<{ h: ProxyHarness; up: ScriptedUpstream }>
  sandboxOnly(options?: Omit<Parameters<typeof proxyHarness>[0], 'dialect'>): Promise<ProxyHarness>
} {
  let h: ProxyHarness | undefined
  let up: ScriptedUpstream | undefined
  afterEach(async () => {
    await h?.close()
    await up?.close()
    h = undefined
    up = undefined
  })
  return {
    async scripted(env = {}) {
      const harness = await proxyHarness({ dialect, env, upstreamUrl: async (sandboxUrl) => (up = await scriptedUpstream(sandboxUrl)).url })
      h = harness
      return { h: harness, up: up! }
    },
    async sandboxOnly(options = {}) {
      h = await proxyHarness({ dialect, ...options })
      return h
    },
  }
}
