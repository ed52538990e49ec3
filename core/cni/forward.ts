/**
 * Which calls the plugin forwards to the node agent whole (docs/design-plugin.md §Thin client),
 * read from as little of the call as the rule needs — the top-level `cniVersion` and
 * `ipam.agentSocket`, `ipam.mode`, `ipam.timeoutMs`, the request's size and the JSON's depth —
 * so that the forwarder loads neither the dispatcher nor the netconf validator: the agent
 * validates the netconf. The Go forwarder (ipam-plugin/forwarder/) mirrors this rule, and
 * test/plugin/forwarder.int.test.ts runs both clients on the same inputs. Imports only core's
 * dependency-free protocol module.
 */
import { callRequest, MAX_REQUEST_BYTES } from '../node-ipam/protocol.ts';

/** netconf `ipam.timeoutMs` when absent: 30 s per call (core/cni/netconf.ts applies it too). */
export const DEFAULT_TIMEOUT_MS = 30_000;
/** The range the netconf schema allows for `ipam.timeoutMs` (ms); outside it the direct path says so. */
const TIMEOUT_MIN_MS = 100;
const TIMEOUT_MAX_MS = 600_000;
/** The cniVersion of a client-side error when the call names none (CNI's current version). */
const FALLBACK_CNI_VERSION = '1.1.0';
/** CNI commands the agent serves; VERSION (and anything else) stays in the executable. */
const FORWARDED = new Set(['ADD', 'DEL', 'CHECK', 'GC', 'STATUS']);
/**
 * 10,000 levels of arrays and objects at most: Go's encoding/json refuses deeper JSON (its
 * scanner's maxNestingDepth), so the Go forwarder cannot read such a netconf and sends it to the
 * direct path; this client does the same, so that both decide alike. The direct path answers it
 * as the agent would (both run core/cni's dispatcher).
 */
export const MAX_FORWARD_DEPTH = 10_000;

/**
 * The environment variable by which the Go forwarder tells the TypeScript executable it execs as
 * `blockipam-direct` that the forwarding rule has been applied: set, the call runs on the direct
 * path at once and nothing connects to the agent's socket (the decision is made once, by the
 * forwarder). Its value is "1", or after a connect() that failed so that the agent never saw the
 * call, that errno's name, a space and the socket's path (`ECONNREFUSED /run/…/ipam.sock`),
 * which the direct path logs. A runtime that sets it itself sends every call to the direct path.
 */
export const DIRECT_ENV = 'BLOCKIPAM_DIRECT';

/** Why the agent was not asked, from a {@link DIRECT_ENV} value: undefined for "1" (or no errno). */
export function directReason(value: string): { readonly errno: string; readonly socket: string } | undefined {
  const space = value.indexOf(' ');
  if (space <= 0 || !/^E[A-Z]+$/.test(value.slice(0, space))) return undefined;
  return { errno: value.slice(0, space), socket: value.slice(space + 1) };
}

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
 * The size of the request line the client sends for a call (bytes of UTF-8, newline not counted):
 * `JSON.stringify(callRequest(env, stdin))`, which the agent bounds by MAX_REQUEST_BYTES. The Go
 * forwarder writes the same bytes (wire.go requestLine).
 */
export const requestBytes = (env: Readonly<Record<string, string | undefined>>, stdin: string): number =>
  Buffer.byteLength(JSON.stringify(callRequest(env, stdin)), 'utf8');

/**
 * Whether `json` (valid JSON) nests deeper than `limit` arrays and objects; strings are skipped.
 * One pass, no allocation.
 */
export function nestsDeeper(json: string, limit: number): boolean {
  let depth = 0;
  for (let i = 0; i < json.length; i++) {
    const c = json.charCodeAt(i);
    if (c === 0x22) {
      // a string: skip to its closing quote (a backslash escapes the next character)
      for (i++; i < json.length && json.charCodeAt(i) !== 0x22; i++) if (json.charCodeAt(i) === 0x5c) i++;
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > limit) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

/**
 * Where a call goes: the agent's socket, or undefined for the direct path — CNI_COMMAND (of
 * `env`) not one of ADD, DEL, CHECK, GC, STATUS (VERSION included); a request line
 * ({@link requestBytes}) over the agent's MAX_REQUEST_BYTES (1 MiB: a GC listing tens of
 * thousands of attachments — the direct path reads up to 64 MiB); stdin not a JSON object, or
 * nested deeper than {@link MAX_FORWARD_DEPTH}; no `ipam.agentSocket` that {@link isSocketPath}
 * accepts; `ipam.mode` "standalone", or a field the forwarder would have to guess about:
 * `ipam.mode` other than absent or "agent", `ipam.timeoutMs` present and not an integer
 * 100–600000 (the direct path refuses those naming the field, code 7). Never throws.
 */
export function forwardTarget(
  env: Readonly<Record<string, string | undefined>>,
  stdin: string,
): ForwardTarget | undefined {
  const command = env.CNI_COMMAND;
  if (command === undefined || !FORWARDED.has(command)) return undefined;
  // UTF-8 takes at least one byte per UTF-16 unit: a longer stdin cannot fit, unparsed
  if (stdin.length > MAX_REQUEST_BYTES) return undefined;
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
  if (nestsDeeper(stdin, MAX_FORWARD_DEPTH) || requestBytes(env, stdin) > MAX_REQUEST_BYTES) return undefined;
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
