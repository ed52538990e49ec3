/**
 * What the plugin's two executables share about forwarding (docs/design-plugin.md §Forwarder):
 * the Go forwarder (ipam-plugin/forwarder/) sends ADD, DEL, CHECK, GC and STATUS to the node
 * agent over core/node-ipam/wire.ts and execs the TypeScript executable for the direct path with
 * {@link DIRECT_ENV} saying why. Dependency-free.
 */

/** netconf `ipam.timeoutMs` when absent: 30 s per call (core/cni/netconf.ts applies it too). */
export const DEFAULT_TIMEOUT_MS = 30_000;

/**
 * The environment variable by which the Go forwarder tells the TypeScript executable why the
 * call runs on the direct path: "1" when the forwarder did not ask the agent (VERSION, a netconf
 * without `ipam.agentSocket`, `ipam.mode: standalone`, stdin the forwarder cannot read), else the
 * reason the agent did not serve it (`connect: ENOENT /run/…/ipam.sock.v3`, `not served: …`, `no
 * answer within 1500 ms`), which the direct path logs at warn.
 */
export const DIRECT_ENV = 'BLOCKIPAM_DIRECT';

/**
 * How long before the client's deadline the agent stops a call (ms) for a call of `timeoutMs`: a
 * tenth, at most 1 s, so that the agent's own answer (CNI 11, time budget exceeded) reaches the
 * client before the client stops waiting.
 */
export const agentMarginMs = (timeoutMs: number): number => Math.min(1_000, Math.floor(timeoutMs / 10));
