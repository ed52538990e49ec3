/**
 * A stand-in node agent speaking the raw CNI call wire (node IPAM protocol v2: one JSON line
 * each way) on a Unix socket in a temporary directory, for fault tests of the clients: it
 * records every connection and request line and answers each as the test says — bytes as
 * given, silence, or a close without an answer.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** What the stand-in does with one request line. */
export type RawReply =
  /** Write these bytes as they are (an answer, or a malformed one), then close. */
  | { readonly raw: string }
  /** Close the connection without answering. */
  | { readonly close: true }
  /** Keep the connection open and never answer. */
  | { readonly silent: true };

/** A well-formed v2 answer line. */
export function v2Answer(code: number, stdout: string, stderr = ''): RawReply {
  return { raw: `${JSON.stringify({ v: 2, code, stdout, stderr })}\n` };
}

export interface RawAgent {
  readonly socket: string;
  /** Connections accepted so far. */
  readonly connections: number;
  /** Request lines received (without their newline), in order. */
  readonly lines: string[];
  /** The reply to the next requests; replace it per test. */
  reply: (line: string) => RawReply;
  close(): Promise<void>;
}

/** Starts the stand-in; by default it answers every request with code 0 and empty output. */
export async function rawAgent(): Promise<RawAgent> {
  const dir = mkdtempSync(join(tmpdir(), 'bipam-raw-agent-'));
  const socket = join(dir, 'ipam.sock');
  const open = new Set<Socket>();
  const state = {
    connections: 0,
    lines: [] as string[],
    reply: ((): RawReply => v2Answer(0, '')) as (line: string) => RawReply,
  };
  const server: Server = createServer((s) => {
    state.connections++;
    open.add(s);
    s.on('close', () => open.delete(s));
    s.on('error', () => undefined);
    // bytes until the newline, decoded once: a character split across chunks stays whole
    let bytes = Buffer.alloc(0);
    s.on('data', (chunk: Buffer) => {
      bytes = Buffer.concat([bytes, chunk]);
      const nl = bytes.indexOf(10);
      if (nl < 0) return;
      const line = bytes.subarray(0, nl).toString('utf8');
      bytes = Buffer.alloc(0);
      state.lines.push(line);
      const r = state.reply(line);
      if ('raw' in r) s.end(r.raw);
      else if ('close' in r) s.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socket, resolve);
  });
  return {
    socket,
    get connections() {
      return state.connections;
    },
    lines: state.lines,
    get reply() {
      return state.reply;
    },
    set reply(f) {
      state.reply = f;
    },
    async close() {
      for (const s of open) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
