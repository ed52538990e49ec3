/**
 * The node IPAM wire, protocol v3 (docs/design-agent.md §IPAM server): how the plugin's Go
 * forwarder (ipam-plugin/forwarder/) hands one raw CNI call to the node agent, and learns before
 * any work whether the agent will run it. One call per connection, on the socket at
 * {@link agentSocketPath}; integers big-endian:
 *
 * ```
 * client → request  u8 version (3) | u64 deadline | u32 E | u32 S | env (E bytes) | stdin (S bytes)
 * agent  → READY    'A'                                  nothing done yet; waits for GO
 *        | NOT_SERVED 'N' | u32 n | reason (n bytes)     nothing done, ever; the agent closes
 * client → GO       'G'                                  the client is committed to the agent
 * agent  → RESULT   'R' | u8 code | u32 O | u32 R | stdout (O bytes) | stderr (R bytes); closes
 * ```
 *
 * - `deadline`: when the client stops waiting, CLOCK_MONOTONIC in ns (one clock for the whole
 *   host: Go's clock_gettime(CLOCK_MONOTONIC), Node's process.hrtime.bigint()).
 * - `env`: the call's CNI_* variables that are set ({@link CNI_CALL_ENV}), each `NAME=value` and
 *   a NUL (an environment value holds no NUL).
 * - `stdin`: the plugin's stdin, raw bytes as received (at most {@link MAX_STDIN_BYTES}).
 * - RESULT: the exit code, stdout and stderr the plugin process writes as they are.
 *
 * Dependency-free.
 */

/** The protocol version this build speaks. A change of anything above bumps it and the socket's path. */
const NODE_IPAM_PROTOCOL = 3;

/**
 * The socket a client of this version connects to, for the netconf's `ipam.agentSocket`: the
 * version is in the path, so a client and an agent of different versions never meet — connect()
 * fails (ENOENT, or ECONNREFUSED on a stale file) and the client takes its direct path, during a
 * rolling upgrade in either direction.
 */
export const agentSocketPath = (agentSocket: string): string => `${agentSocket}.v${NODE_IPAM_PROTOCOL}`;

/**
 * The longest `ipam.agentSocket` (bytes) whose {@link agentSocketPath} fits a Unix socket path:
 * sun_path is 108 bytes with its NUL (unix(7)), less the version suffix — 104.
 */
export const MAX_AGENT_SOCKET_BYTES = 107 - agentSocketPath('').length;

/** Bytes of the request's fixed header: version, deadline, E, S. */
export const REQUEST_HEADER_BYTES = 17;
/** At most this many bytes of env (six CNI_* variables; CNI_ARGS is the long one). */
const MAX_ENV_BYTES = 64 << 10;
/**
 * At most this many bytes of stdin (a netconf is a few KiB; a GC listing tens of thousands of
 * attachments is more, and the forwarder sends such a call to the direct path, which reads 64 MiB).
 */
export const MAX_STDIN_BYTES = 1 << 20;
/** At most this many bytes of a NOT_SERVED reason. */
const MAX_REASON_BYTES = 4 << 10;

/** The message kinds, one byte each. */
export const READY = 0x41;
const NOT_SERVED = 0x4e;
export const GO = 0x47;
const RESULT = 0x52;

/** The CNI_* variables a request carries, those set in the plugin's environment (SPEC §2 "Parameters"). */
export const CNI_CALL_ENV = [
  'CNI_COMMAND',
  'CNI_CONTAINERID',
  'CNI_NETNS',
  'CNI_IFNAME',
  'CNI_ARGS',
  'CNI_PATH',
] as const;
type CniCallEnvName = (typeof CNI_CALL_ENV)[number];

/** A request's header: the version, the client's deadline, and the sizes of what follows. */
export interface RequestHeader {
  readonly version: number;
  /** CLOCK_MONOTONIC ns at which the client stops waiting. */
  readonly deadlineNs: bigint;
  readonly envBytes: number;
  readonly stdinBytes: number;
}

/** One CNI call as the plugin received it. */
export interface CallRequest {
  readonly deadlineNs: bigint;
  /** Exactly those of {@link CNI_CALL_ENV} that are set. */
  readonly env: Readonly<Partial<Record<CniCallEnvName, string>>>;
  /** The plugin's stdin (UTF-8 decoded; may be empty or not JSON: the dispatcher says so). */
  readonly stdin: string;
}

type Problem = { readonly problem: string };

/**
 * Reads the fixed header from its first {@link REQUEST_HEADER_BYTES} bytes.
 * @returns the header, or a problem: another version (named with this one), a size over its bound
 */
export function parseRequestHeader(bytes: Uint8Array): RequestHeader | Problem {
  const view = new DataView(bytes.buffer, bytes.byteOffset, REQUEST_HEADER_BYTES);
  const version = view.getUint8(0);
  if (version !== NODE_IPAM_PROTOCOL)
    return { problem: `protocol version ${version}, this agent speaks ${NODE_IPAM_PROTOCOL}` };
  const envBytes = view.getUint32(9);
  const stdinBytes = view.getUint32(13);
  if (envBytes > MAX_ENV_BYTES) return { problem: `env of ${envBytes} bytes, over ${MAX_ENV_BYTES}` };
  if (stdinBytes > MAX_STDIN_BYTES)
    return { problem: `stdin of ${stdinBytes} bytes, over ${MAX_STDIN_BYTES}` };
  return { version, deadlineNs: view.getBigUint64(1), envBytes, stdinBytes };
}

/**
 * Reads the request's body (`header.envBytes + header.stdinBytes` bytes after the header).
 * @returns the request, or a problem naming the entry that is not `NAME=value` of CNI_CALL_ENV
 */
export function parseRequestBody(header: RequestHeader, body: Buffer): CallRequest | Problem {
  const env: Partial<Record<CniCallEnvName, string>> = {};
  const entries = body.subarray(0, header.envBytes).toString('utf8').split('\0');
  if (entries.pop() !== '') return { problem: 'env: the last entry has no NUL' };
  for (const entry of entries) {
    const eq = entry.indexOf('=');
    const name = entry.slice(0, Math.max(0, eq));
    if (!(CNI_CALL_ENV as readonly string[]).includes(name))
      return {
        problem: `env: ${JSON.stringify(entry.slice(0, 64))} is not NAME=value of ${CNI_CALL_ENV.join(', ')}`,
      };
    env[name as CniCallEnvName] = entry.slice(eq + 1);
  }
  return { deadlineNs: header.deadlineNs, env, stdin: body.subarray(header.envBytes).toString('utf8') };
}

/** NOT_SERVED with `reason` (cut to {@link MAX_REASON_BYTES} bytes). */
export function notServedMessage(reason: string): Buffer {
  const text = Buffer.from(reason, 'utf8').subarray(0, MAX_REASON_BYTES);
  const head = Buffer.alloc(5);
  head.writeUint8(NOT_SERVED, 0);
  head.writeUint32BE(text.length, 1);
  return Buffer.concat([head, text]);
}

/** RESULT: exit code `code` (0–255), and stdout and stderr as the plugin writes them. */
export function resultMessage(code: number, stdout: string, stderr: string): Buffer {
  const out = Buffer.from(stdout, 'utf8');
  const err = Buffer.from(stderr, 'utf8');
  const head = Buffer.alloc(10);
  head.writeUint8(RESULT, 0);
  head.writeUint8(code, 1);
  head.writeUint32BE(out.length, 2);
  head.writeUint32BE(err.length, 6);
  return Buffer.concat([head, out, err]);
}
