import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { processingTaskNames, runTaskByName } from '../../src/processing-tasks.ts'
import { createTestRuntime } from '../helpers/runtime.ts'

const SRC = join(import.meta.dirname, '../../src')

/** Every `defineProcessingTask('<name>', …)` in the sources. */
function definedTaskNames(): string[] {
  const names: string[] = []
  for (const entry of readdirSync(SRC, { recursive: true, encoding: 'utf8' })) {
    if (!entry.endsWith('.ts')) continue
    const text = readFileSync(join(SRC, entry), 'utf8')
    for (const match of text.matchAll(/defineProcessingTask\('([^']+)'/g)) names.push(match[1]!)
  }
  return names
}

describe('processing tasks', () => {
  it('lists every task a feature defines, each once (the thread refuses a name it does not list)', () => {
    const defined = definedTaskNames()
    expect(defined.length).toBeGreaterThanOrEqual(5)
    expect(new Set(defined).size).toBe(defined.length)
    expect([...processingTaskNames].sort()).toEqual([...defined].sort())
  })

  it('refuses a name it does not know', async () => {
    const rt = await createTestRuntime()
    try {
      await expect(runTaskByName(rt, 'noSuchTask', {})).rejects.toThrow('no processing task named "noSuchTask"')
    } finally {
      await rt.close()
    }
  })
})
