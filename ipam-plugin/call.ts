/**
 * One invocation of the executable as a function (docs/design-plugin.md §Thin client, §Start-up):
 * a call core/cni's forwarding rule sends to the node agent (forwardTarget: ADD, DEL, CHECK, GC
 * or STATUS with `ipam.agentSocket` and not `ipam.mode: standalone`) goes there whole, and what
 * the agent answers is written as it is — exit code, stdout, stderr; every other call, and one
 * whose connect() failed so that the agent never saw it, runs on the direct path (direct.ts), as
 * does every call with {@link DIRECT_ENV} set (the Go forwarder decided already: no connect).
 * The forwarding path reads stdin and parses it with JSON.parse only: it loads neither the
 * dispatcher nor the netconf validator (the agent validates). It appends the call's lines to the
 * netconf's `ipam.logFile` as the direct path would (the agent's warn lines, a `done` line with
 * `path: "agent"`). Testable in-process: main.ts wires it to the process.
 */
import { appendFileSync } from 'node:fs';
import { callRequest } from 'blockipam/core/node-ipam/protocol';
import { DIRECT_ENV, directReason, forwardTarget, type ForwardTarget } from 'blockipam/core/cni/forward';
import { toErrorDocument } from 'blockipam/core/cni/errors';
import type { Io } from 'blockipam/core/cni';
import type { DirectDeps } from './direct.ts';

/** Runs one call. @returns the exit code */
export async function runCall(io: Io, deps: DirectDeps): Promise<number> {
  const command = io.env.CNI_COMMAND;
  const direct = async (o: Io, d: DirectDeps = deps): Promise<number> =>
    (await import('./direct.ts')).runDirect(o, d);
  if (command === undefined || command === 'VERSION' || command === '') return direct(io);
  const decided = io.env[DIRECT_ENV];
  if (decided !== undefined) {
    // the Go forwarder applied the rule and exec'd this executable: never connect again
    const why = directReason(decided);
    return direct(
      io,
      why ? { ...deps, agentUnreachable: { ...why, message: `connect: ${why.errno}` } } : deps,
    );
  }
  let stdin: string;
  try {
    stdin = io.readStdin();
  } catch (e) {
    // unreadable stdin: the direct path reports it as it always did
    return direct({
      ...io,
      readStdin: () => {
        throw e;
      },
    });
  }
  const readStdin = (): string => stdin;
  const target = forwardTarget(io.env, stdin);
  if (target === undefined) return direct({ ...io, readStdin });
  const { forwardCall } = await import('./backend/agent-client.ts');
  const started = performance.now();
  try {
    const r = await forwardCall({
      socket: target.socket,
      timeoutMs: target.timeoutMs,
      request: callRequest(io.env, stdin),
    });
    if (!r.ok)
      return direct(
        { ...io, readStdin },
        { ...deps, agentUnreachable: { socket: target.socket, errno: r.errno, message: r.message } },
      );
    if (r.answer.stdout !== '') io.stdout.write(r.answer.stdout);
    if (r.answer.stderr !== '') io.stderr.write(r.answer.stderr);
    logForwarded(target, io.env, r.answer.stderr, { code: r.answer.code, durationMs: since(started) });
    return r.answer.code;
  } catch (e) {
    const doc = toErrorDocument(e, target.cniVersion);
    const line = logLine('error', doc.msg, io.env, target, { code: doc.code, details: doc.details });
    io.stderr.write(line);
    logForwarded(target, io.env, line, { code: 1, durationMs: since(started) });
    io.stdout.write(`${JSON.stringify(doc)}\n`);
    return 1;
  }
}

const since = (t: number): number => Math.round(performance.now() - t);

/** One JSON log line as the direct path's logger writes it (host/log.ts), for a forwarded call. */
function logLine(
  level: string,
  msg: string,
  env: Io['env'],
  t: ForwardTarget,
  fields: Readonly<Record<string, unknown>>,
): string {
  return `${JSON.stringify({
    time: new Date().toISOString(),
    level,
    msg,
    pid: process.pid,
    cmd: env.CNI_COMMAND,
    network: t.log.network,
    containerID: env.CNI_CONTAINERID ?? '',
    ifname: env.CNI_IFNAME ?? '',
    path: 'agent',
    ...fields,
  })}\n`;
}

/**
 * Appends a forwarded call's lines to the netconf's `ipam.logFile` when it names one: the
 * agent's stderr lines (warn and above, as the direct path logs them) and, at `logLevel` info or
 * debug, a `done` line with the exit code and the wall time (the agent logs the call in full).
 * A log file that cannot be written is skipped: logging never fails a call.
 */
function logForwarded(
  t: ForwardTarget,
  env: Io['env'],
  lines: string,
  fields: Record<string, unknown>,
): void {
  if (t.log.file === undefined) return;
  const verbose = t.log.level === undefined || t.log.level === 'info' || t.log.level === 'debug';
  const text = lines + (verbose ? logLine('info', 'done', env, t, fields) : '');
  if (text === '') return;
  try {
    appendFileSync(t.log.file, text);
  } catch {
    // the direct path reports an unusable log file on stderr; a forwarded call stays quiet
  }
}
