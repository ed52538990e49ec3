/**
 * A stand-in node agent speaking the node IPAM wire v3 (core/node-ipam wire.ts) on a Unix socket
 * in a temporary directory, for fault tests of the forwarder: it records every connection, each
 * request parsed and each GO, and answers each call as the test says — NOT_SERVED, READY and
 * then a RESULT, silence or a close at either step, or bytes as given.
 */
import { mkdtempSync, rmSync, utimesSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { agentSocketPath } from 'blockipam/core/node-ipam';

/** One request as the stand-in read it. */
export interface RawRequest {
  readonly version: number;
  readonly deadlineNs: bigint;
  readonly env: Record<string, string>;
  readonly stdin: Buffer;
}

/** What to do after GO. */
export type AfterGo =
  | { readonly code: number; readonly stdout: string; readonly stderr?: string }
  | { readonly raw: Buffer }
  | { readonly close: true }
  | { readonly silent: true };

/** What to do with one request. */
export type RawReply =
  | { readonly notServed: string }
  | { readonly ready: AfterGo; readonly readyAfterMs?: number }
  | { readonly raw: Buffer }
  | { readonly close: true }
  | { readonly silent: true };

export interface RawAgent {
  /** The netconf's `ipam.agentSocket` for it (it listens at core's agentSocketPath of it). */
  readonly socket: string;
  /** Connections accepted so far. */
  readonly connections: number;
  /** Requests read, in order. */
  readonly requests: RawRequest[];
  /** GOs received. */
  readonly gos: number;
  /** The reply to the next requests; replace it per test. Default: READY, then exit 0, nothing written. */
  reply: (request: RawRequest) => RawReply;
  /**
   * The agent's heartbeat: while true the socket's mtime is set to now every 200 ms, as the
   * agent's server does; false (the default) sets it a minute into the past — a stopped agent.
   */
  heartbeat: boolean;
  close(): Promise<void>;
}

/** RESULT's bytes. */
export function resultBytes(code: number, stdout: string, stderr = ''): Buffer {
  const out = Buffer.from(stdout);
  const err = Buffer.from(stderr);
  const head = Buffer.alloc(10);
  head.write('R', 0);
  head.writeUint8(code, 1);
  head.writeUint32BE(out.length, 2);
  head.writeUint32BE(err.length, 6);
  return Buffer.concat([head, out, err]);
}

/** NOT_SERVED's bytes. */
export function notServedBytes(reason: string): Buffer {
  const text = Buffer.from(reason);
  const head = Buffer.alloc(5);
  head.write('N', 0);
  head.writeUint32BE(text.length, 1);
  return Buffer.concat([head, text]);
}

/** Parses a complete request from `bytes`, or undefined while it is incomplete. */
function parse(bytes: Buffer): { request: RawRequest; rest: Buffer } | undefined {
  if (bytes.length < 17) return undefined;
  const e = bytes.readUint32BE(9);
  const n = bytes.readUint32BE(13);
  if (bytes.length < 17 + e + n) return undefined;
  const env = Object.fromEntries(
    bytes
      .subarray(17, 17 + e)
      .toString()
      .split('\0')
      .filter((x) => x !== '')
      .map((x) => [x.slice(0, x.indexOf('=')), x.slice(x.indexOf('=') + 1)]),
  );
  const request = {
    version: bytes[0] ?? 0,
    deadlineNs: bytes.readBigUint64BE(1),
    env,
    stdin: bytes.subarray(17 + e, 17 + e + n),
  };
  return { request, rest: bytes.subarray(17 + e + n) };
}

/**
 * Starts the stand-in at agentSocketPath(`<dir>/ipam.sock`) — or at `path` as given (e.g. an
 * agent of another version, at the unversioned path).
 */
export async function rawAgent(path?: string): Promise<RawAgent> {
  const dir = mkdtempSync(join(tmpdir(), 'bipam-raw-agent-'));
  const socket = join(dir, 'ipam.sock');
  const open = new Set<Socket>();
  const state = {
    connections: 0,
    requests: [] as RawRequest[],
    gos: 0,
    reply: ((): RawReply => ({ ready: { code: 0, stdout: '' } })) as (r: RawRequest) => RawReply,
  };
  const after = (s: Socket, then: AfterGo): void => {
    if ('code' in then) s.end(resultBytes(then.code, then.stdout, then.stderr));
    else if ('raw' in then) s.end(then.raw);
    else if ('close' in then) s.destroy();
  };
  const server: Server = createServer((s) => {
    state.connections++;
    open.add(s);
    s.on('close', () => open.delete(s));
    s.on('error', () => undefined);
    let bytes = Buffer.alloc(0);
    let waiting: AfterGo | undefined;
    s.on('data', (chunk: Buffer) => {
      if (waiting) {
        if (chunk[0] === 0x47) state.gos++;
        after(s, waiting);
        waiting = undefined;
        return;
      }
      bytes = Buffer.concat([bytes, chunk]);
      const got = parse(bytes);
      if (!got) return;
      state.requests.push(got.request);
      const reply = state.reply(got.request);
      if ('notServed' in reply) s.end(notServedBytes(reply.notServed));
      else if ('raw' in reply) s.end(reply.raw);
      else if ('close' in reply) s.destroy();
      else if ('ready' in reply) {
        waiting = reply.ready;
        setTimeout(() => s.write('A'), reply.readyAfterMs ?? 0);
      }
    });
  });
  const listenAt = path ?? agentSocketPath(socket);
  await new Promise<void>((resolve) => server.listen(listenAt, resolve));
  let beat: NodeJS.Timeout | undefined;
  const touch = (ms: number): void => utimesSync(listenAt, new Date(ms), new Date(ms));
  touch(Date.now() - 60_000);
  return {
    get heartbeat() {
      return beat !== undefined;
    },
    set heartbeat(on) {
      clearInterval(beat);
      beat = on ? setInterval(() => touch(Date.now()), 200) : undefined;
      touch(on ? Date.now() : Date.now() - 60_000);
    },
    socket,
    get connections() {
      return state.connections;
    },
    requests: state.requests,
    get gos() {
      return state.gos;
    },
    get reply() {
      return state.reply;
    },
    set reply(f) {
      state.reply = f;
    },
    async close() {
      clearInterval(beat);
      for (const s of open) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
