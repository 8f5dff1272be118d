/** Reads metric series from the registry of the current context (tests give each a fresh one). */
import { Effect, Metric } from "effect"

/** The value of the series of `id` whose attributes include `attributes` (counters: count; gauges: value; histograms: count). */
export const metricValue = (id: string, attributes: Record<string, string>) =>
  Effect.map(Metric.snapshot, (snapshots) => {
    let total = 0
    for (const s of snapshots) {
      if (s.id !== id) continue
      const attrs = (s.attributes ?? {}) as Record<string, string>
      if (!Object.entries(attributes).every(([k, v]) => attrs[k] === v)) continue
      const state = s.state as { count?: number; value?: number }
      total += Number(s.type === "Gauge" ? state.value : state.count ?? 0)
    }
    return total
  })

/** Every series of the metrics named, as `id{k=v,…} = n` lines (for a failure message). */
export const dumpMetrics = Effect.map(Metric.snapshot, (snapshots) =>
  snapshots
    .filter((s) => s.id.startsWith("baton_"))
    .map((s) => `${s.id}${JSON.stringify(s.attributes)} = ${JSON.stringify(s.state, (_k, v) => (v instanceof Map ? [...v] : v))}`)
    .join("\n"))
