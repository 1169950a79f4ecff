import { Counter, Registry } from 'prom-client'
import { describe, expect, it } from 'vitest'
import { defineMetrics } from '../../src/utils/define-metrics.ts'

describe('defineMetrics', () => {
  const things = defineMetrics((registers) => new Counter({ name: 'things_total', help: 'Things', registers }))

  it('creates a registry\'s metrics once and hands back the same objects after', async () => {
    const registry = new Registry()
    const first = things(registry)
    first.inc()
    expect(things(registry)).toBe(first)
    expect(await registry.metrics()).toContain('things_total 1')
  })

  it('gives each registry metrics of its own', async () => {
    const a = new Registry()
    const b = new Registry()
    things(a).inc(2)
    expect(things(b)).not.toBe(things(a))
    expect(await b.metrics()).toContain('things_total 0')
  })
})
