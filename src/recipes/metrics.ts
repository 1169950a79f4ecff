import { Counter, Histogram } from 'prom-client'
import { defineMetrics } from '../utils/define-metrics.ts'

/** Recipes' Prometheus metrics, registered once per registry. */
export interface RecipeMetrics {
  runs: Counter<'recipe' | 'trigger' | 'outcome'>
  runSeconds: Histogram<'recipe' | 'outcome'>
  /** Events per event-triggered run. */
  batchSize: Histogram<'recipe'>
}

export const recipeMetrics = defineMetrics((registers): RecipeMetrics => ({
  runs: new Counter({ name: 'switchboard_recipe_runs_total', help: 'Recipe runs by recipe, trigger and outcome (succeeded, failed, timed_out, skipped)', labelNames: ['recipe', 'trigger', 'outcome'], registers }),
  runSeconds: new Histogram({
    name: 'switchboard_recipe_run_seconds',
    help: 'Recipe run duration by recipe and outcome',
    labelNames: ['recipe', 'outcome'],
    buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60, 300, 1800],
    registers,
  }),
  batchSize: new Histogram({ name: 'switchboard_recipe_event_batch_size', help: 'Events per event-triggered run', labelNames: ['recipe'], buckets: [1, 5, 25, 100, 250, 500, 1000, 5000], registers }),
}))
