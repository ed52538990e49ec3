/**
 * Which calls the plugin forwards to the node agent whole (docs/design-plugin.md §Thin client),
 * read from as little of the call as the rule needs — the top-level `cniVersion` and
 * `ipam.agentSocket`, `ipam.mode`, `ipam.timeoutMs` — so that the forwarder loads neither the
 * dispatcher nor the netconf validator: the agent validates the netconf. The Go forwarder follows
 * the same rule. Dependency-free.
 */

/** netconf `ipam.timeoutMs` when absent: 30 s per call (core/cni/netconf.ts applies it too). */
export const DEFAULT_TIMEOUT_MS = 30_000;
/** The range the netconf schema allows for `ipam.timeoutMs` (ms); outside it the direct path says so. */
const TIMEOUT_MIN_MS = 100;
const TIMEOUT_MAX_MS = 600_000;
/** The cniVersion of a client-side error when the call names none (CNI's current version). */
const FALLBACK_CNI_VERSION = '1.1.0';
/** CNI commands the agent serves; VERSION (and anything else) stays in the executable. */
const FORWARDED = new Set(['ADD', 'DEL', 'CHECK', 'GC', 'STATUS']);

export interface ForwardTarget {
  /** netconf `ipam.agentSocket`. */
  readonly socket: string;
  /** netconf `ipam.timeoutMs` (an integer 100–600000), else {@link DEFAULT_TIMEOUT_MS} when absent; ms. */
  readonly timeoutMs: number;
  /** netconf's top-level `cniVersion` when it is a string, else "1.1.0": for the client's own CNI errors. */
  readonly cniVersion: string;
  /**
   * What the TypeScript executable logs the call with, when the netconf gives them as strings:
   * `ipam.logFile`, `ipam.logLevel` and the network `name` (not needed to forward).
   */
  readonly log: { readonly file?: string; readonly level?: string; readonly network?: string };
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** sun_path holds 108 bytes with its NUL (unix(7)): the netconf schema's bound on `ipam.agentSocket`. */
export const MAX_SOCKET_PATH_BYTES = 107;

/**
 * Whether `v` is a socket path the forwarder may connect to: a string that is absolute (starts
 * with "/": never relative to the runtime's working directory, never "@…", which connect(2)
 * would take as an abstract socket — one any process of the network namespace may own, with no
 * file permissions), at most {@link MAX_SOCKET_PATH_BYTES} bytes of UTF-8, with no NUL byte (the
 * kernel would cut the path there). The netconf schema refuses anything else, so such a call goes
 * to the direct path, which names the field (code 7). The Go forwarder applies the same rule.
 */
export function isSocketPath(v: unknown): v is string {
  return (
    typeof v === 'string' &&
    v.startsWith('/') &&
    !v.includes('\0') &&
    new TextEncoder().encode(v).length <= MAX_SOCKET_PATH_BYTES
  );
}

/**
 * Where a call goes: the agent's socket, or undefined for the direct path — CNI_COMMAND not one of
 * ADD, DEL, CHECK, GC, STATUS (VERSION included), stdin not a JSON object, no
 * `ipam.agentSocket` that {@link isSocketPath} accepts, `ipam.mode` "standalone", or a field the forwarder would have to guess
 * about: `ipam.mode` other than absent or "agent", `ipam.timeoutMs` present and not an integer
 * 100–600000 (the direct path refuses those naming the field, code 7). Never throws.
 */
export function forwardTarget(command: string | undefined, stdin: string): ForwardTarget | undefined {
  if (command === undefined || !FORWARDED.has(command)) return undefined;
  let doc: unknown;
  try {
    doc = JSON.parse(stdin);
  } catch {
    return undefined;
  }
  if (!isObject(doc) || !isObject(doc.ipam)) return undefined;
  const { agentSocket, mode, timeoutMs, logFile, logLevel } = doc.ipam;
  if (!isSocketPath(agentSocket) || (mode !== undefined && mode !== 'agent')) return undefined;
  const budget = timeoutMs === undefined ? DEFAULT_TIMEOUT_MS : timeoutMs;
  if (
    typeof budget !== 'number' ||
    !Number.isInteger(budget) ||
    budget < TIMEOUT_MIN_MS ||
    budget > TIMEOUT_MAX_MS
  )
    return undefined;
  return {
    socket: agentSocket,
    timeoutMs: budget,
    cniVersion: typeof doc.cniVersion === 'string' ? doc.cniVersion : FALLBACK_CNI_VERSION,
    log: {
      ...(typeof logFile === 'string' && logFile !== '' ? { file: logFile } : {}),
      ...(typeof logLevel === 'string' ? { level: logLevel } : {}),
      ...(typeof doc.name === 'string' ? { network: doc.name } : {}),
    },
  };
}

/**
 * The agent's budget for a call of `timeoutMs` (ms): that less a margin (a tenth, at most 1 s),
 * so that the agent's own answer (CNI 11, time budget exceeded) reaches the client before the
 * client stops waiting at `timeoutMs`. The agent counts it from accepting the connection.
 */
export const agentBudgetMs = (timeoutMs: number): number =>
  timeoutMs - Math.min(1_000, Math.floor(timeoutMs / 10));
