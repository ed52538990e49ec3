/**
 * A client's deadline as the wire carries it (core/node-ipam wire.ts): CLOCK_MONOTONIC ns, one
 * clock for every process of the host — Node's process.hrtime.bigint() reads the clock the Go
 * forwarder's clock_gettime(CLOCK_MONOTONIC) does.
 */

/** ms left until `deadlineNs` (CLOCK_MONOTONIC ns); negative once it has passed. */
export const msUntil = (deadlineNs: bigint): number => Number(deadlineNs - process.hrtime.bigint()) / 1e6;
