/**
 * The reports of an instance's liveness and readiness (`baton.checkLiveness`,
 * `baton.checkReadiness`), as an orchestrator's probes want them: components
 * and the worst of their statuses. Liveness does no I/O; readiness adds one
 * `ping` per store, each under {@link pingTimeout} on the Clock.
 *
 * @since 0.1.0
 */
import { Duration } from "effect"

/**
 * How healthy a component is: the worst of them is the report's status.
 *
 * @category models
 * @since 0.1.0
 */
export type HealthStatus = "Healthy" | "Degraded" | "Unhealthy"

/**
 * One component of a health report: its name, status and a message for a reader.
 *
 * @category models
 * @since 0.1.0
 */
export interface HealthComponent {
  readonly name: string
  readonly status: HealthStatus
  readonly message: string
}

/**
 * The worst status of its components, and each of them.
 *
 * @category models
 * @since 0.1.0
 */
export interface HealthReport {
  readonly status: HealthStatus
  readonly components: ReadonlyArray<HealthComponent>
}

const rank: Record<HealthStatus, number> = { Healthy: 0, Degraded: 1, Unhealthy: 2 }

/**
 * A report of `components`: its status is the worst of theirs.
 *
 * @category health
 * @since 0.1.0
 */
export const report = (components: ReadonlyArray<HealthComponent>): HealthReport => ({
  status: components.reduce<HealthStatus>((worst, c) => (rank[c.status] > rank[worst] ? c.status : worst), "Healthy"),
  components
})

/**
 * How long readiness waits for a store's ping.
 *
 * @category health
 * @since 0.1.0
 */
export const pingTimeout = Duration.seconds(2)
