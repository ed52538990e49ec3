/**
 * A raw client of the node agent's IPAM socket for tests (node:net), speaking the node IPAM wire
 * v3 (core/node-ipam wire.ts) where the plugin's forwarder would check what the test means to
 * send wrong: one call per connection (docs/design-agent.md §IPAM server).
 */
import { connect } from 'node:net';
import { agentSocketPath, CNI_CALL_ENV } from 'blockipam/core/node-ipam';

/** A call to frame: its CNI_* variables and stdin; `deadlineMs` from now (default 30 s). */
export interface CallPayload {
  readonly env: Readonly<Record<string, string>>;
  readonly stdin: string | Buffer;
  readonly deadlineMs?: number;
}

/** The request frame of `call` (wire.ts): version 3, the deadline, env entries, stdin bytes. */
export function frameRequest(call: CallPayload, version = 3): Buffer {
  const env = Buffer.from(
    Object.entries(call.env)
      .filter(([name]) => (CNI_CALL_ENV as readonly string[]).includes(name))
      .map(([name, value]) => `${name}=${value}\0`)
      .join(''),
  );
  const stdin = Buffer.isBuffer(call.stdin) ? call.stdin : Buffer.from(call.stdin);
  const head = Buffer.alloc(17);
  head.writeUint8(version, 0);
  head.writeBigUint64BE(process.hrtime.bigint() + BigInt(call.deadlineMs ?? 30_000) * 1_000_000n, 1);
  head.writeUint32BE(env.length, 9);
  head.writeUint32BE(stdin.length, 13);
  return Buffer.concat([head, env, stdin]);
}

/**
 * What the agent answered: RESULT's `code`, `stdout` and `stderr`; or NOT_SERVED's reason; or a
 * close without either (`closed`, and whether READY came first).
 */
export interface SocketAnswer {
  readonly code?: number;
  readonly stdout?: string;
  readonly stderr?: string;
  readonly notServed?: string;
  readonly closed?: true;
  readonly ready?: boolean;
}

/** Decodes what the agent wrote on one connection (READY, then RESULT; or NOT_SERVED). */
export function decodeAnswer(bytes: Buffer): SocketAnswer {
  if (bytes[0] === 0x4e) return { notServed: bytes.subarray(5, 5 + bytes.readUint32BE(1)).toString() };
  const ready = bytes[0] === 0x41;
  const r = bytes.subarray(ready ? 1 : 0);
  if (r[0] !== 0x52 || r.length < 10) return { closed: true, ready };
  const o = r.readUint32BE(2);
  return {
    code: r[1] ?? -1,
    stdout: r.subarray(10, 10 + o).toString(),
    stderr: r.subarray(10 + o, 10 + o + r.readUint32BE(6)).toString(),
  };
}

/**
 * Sends `payload` on a new connection to the socket of `base` (core's agentSocketPath: the
 * netconf's `ipam.agentSocket`) — a call framed, or bytes as they are — sends GO on READY (unless
 * `go` is false: then it closes; `beforeGo` runs first), and reads until the server closes.
 * @returns the answer
 * @throws (rejects) on a connection error
 */
export function askSocket(
  base: string,
  payload: CallPayload | Buffer,
  options: { readonly go?: boolean; readonly beforeGo?: () => void } = {},
): Promise<SocketAnswer> {
  return new Promise((resolve, reject) => {
    const s = connect(agentSocketPath(base));
    let bytes = Buffer.alloc(0);
    s.on('data', (chunk: Buffer) => {
      const first = bytes.length === 0;
      bytes = Buffer.concat([bytes, chunk]);
      if (first && bytes[0] === 0x41) {
        options.beforeGo?.();
        if (options.go === false) s.end();
        else s.write(Buffer.of(0x47));
      }
    });
    s.on('error', reject);
    s.on('close', () => resolve(decodeAnswer(bytes)));
    s.write(Buffer.isBuffer(payload) ? payload : frameRequest(payload));
  });
}

/** Node `n1`'s netconf for socket tests (ipam fields merged in). */
export function socketConf(
  ipam: Record<string, unknown> = {},
  cniVersion = '1.0.0',
): Record<string, unknown> {
  return { cniVersion, name: 'n', type: 'ptp', ipam: { type: 'blockipam', nodeName: 'n1', ...ipam } };
}

/**
 * A call: `command` with the CNI_* variables an ADD, DEL or CHECK needs (container
 * `c`, eth0; `env` merged in) and `conf` as stdin (a string as it is, else its JSON).
 */
export function cniCall(
  command: string,
  conf: unknown = socketConf(),
  env: Record<string, string> = {},
): { env: Record<string, string>; stdin: string } {
  const attachment: Record<string, string> = ['ADD', 'DEL', 'CHECK'].includes(command)
    ? { CNI_CONTAINERID: 'c', CNI_NETNS: '/var/run/netns/c', CNI_IFNAME: 'eth0', CNI_PATH: '/opt/cni/bin' }
    : {};
  return {
    env: { CNI_COMMAND: command, ...attachment, ...env },
    stdin: typeof conf === 'string' ? conf : JSON.stringify(conf),
  };
}

/** The CNI document in an answer's stdout (result or error), or undefined when stdout is empty. */
export function answerDoc(answer: SocketAnswer): Record<string, unknown> | undefined {
  const out = answer.stdout;
  if (out === undefined || out === '') return undefined;
  return JSON.parse(out) as Record<string, unknown>;
}
