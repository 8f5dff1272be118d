/**
 * The keys under which a pass hands the saver what it needs in
 * `config.configurable`, beside LangGraph's own.
 */

/**
 * A timer of the pass's writes: called when a write starts, it answers the
 * function to call when the write ended (the runtime records the latency in
 * `BatonMetrics.checkpointWriteDuration`).
 */
export const writeTimerKey = "__baton_write_timer"

/** The execution whose checkpoints the pass writes: kept with each checkpoint (`CheckpointRow.executionId`). */
export const executionKey = "__baton_execution_id"
