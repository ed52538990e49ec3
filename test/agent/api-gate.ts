/**
 * A plain-HTTP front for the run's API server that can hold a chosen request: the process under
 * test gets a kubeconfig naming http://127.0.0.1:PORT, the gate forwards every request to the API
 * server as blockipam-admin (bearer token, the run's CA) and streams the answer back, watches
 * included. Holding one request lets a test put a write of its own between a process's decision
 * and its next read — a race made deterministic.
 */
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { request } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { controlPlane } from '../helpers/control-plane.ts';

export interface ApiGate {
  /**
   * A kubeconfig for the gate: no credentials (the gate adds them), and insecure-skip-tls-verify
   * because client-node refuses an http:// server without it.
   */
  readonly kubeconfig: string;
  /** Every request that reached the gate, in order. */
  readonly requests: readonly { method: string; url: URL }[];
  /**
   * Holds the next request `match` accepts until `release()`. `held` resolves when it arrives
   * and rejects after `timeoutMs` (default 30 000) without one.
   */
  hold(match: (method: string, url: URL) => boolean, timeoutMs?: number): Hold;
  /**
   * Answers every request `match` accepts with HTTP `status` (a Status object naming it) until
   * `lift()`: a resource the API server refuses, e.g. 404 for a CRD not installed.
   */
  refuse(match: (method: string, url: URL) => boolean, status: number): { lift(): void };
  close(): Promise<void>;
}

export interface Hold {
  readonly held: Promise<void>;
  release(): void;
}

interface Gate {
  match: (method: string, url: URL) => boolean;
  arrived: () => void;
  open: Promise<void>;
}

/** Starts a gate on a free loopback port. */
export async function startApiGate(): Promise<ApiGate> {
  const cp = controlPlane();
  const api = new URL(cp.apiUrl);
  const ca = readFileSync(cp.caFile);
  const gates: Gate[] = [];
  const refusals: { match: (method: string, url: URL) => boolean; status: number }[] = [];
  const requests: { method: string; url: URL }[] = [];
  const forward = (req: IncomingMessage, res: ServerResponse): void => {
    const up = request(
      {
        hostname: api.hostname,
        port: api.port,
        path: req.url,
        method: req.method,
        headers: { ...req.headers, host: api.host, authorization: `Bearer ${cp.adminToken}` },
        ca,
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        // At once: a watch's headers must not wait for its first event.
        res.flushHeaders();
        answer.pipe(res);
      },
    );
    up.on('error', () => res.destroy());
    // The client went away (a watch it ended, or its process killed): end the upstream request.
    res.on('close', () => up.destroy());
    req.pipe(up);
  };
  const server = createServer((req, res) => {
    const method = req.method ?? 'GET';
    const url = new URL(req.url ?? '/', 'http://gate');
    requests.push({ method, url });
    const refusal = refusals.find((r) => r.match(method, url));
    if (refusal) {
      res.writeHead(refusal.status, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          kind: 'Status',
          apiVersion: 'v1',
          status: 'Failure',
          code: refusal.status,
          message: 'refused by the gate',
        }),
      );
      return;
    }
    const gate = gates.find((g) => g.match(method, url));
    if (!gate) return forward(req, res);
    gates.splice(gates.indexOf(gate), 1);
    gate.arrived();
    void gate.open.then(() => forward(req, res));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  const dir = mkdtempSync(join(tmpdir(), 'api-gate-'));
  const kubeconfig = join(dir, 'kubeconfig');
  writeFileSync(
    kubeconfig,
    `apiVersion: v1
kind: Config
clusters: [{ name: gate, cluster: { server: "http://127.0.0.1:${port}", insecure-skip-tls-verify: true } }]
users: [{ name: gate, user: {} }]
contexts: [{ name: gate, context: { cluster: gate, user: gate } }]
current-context: gate
`,
  );
  return {
    kubeconfig,
    requests,
    hold(match, timeoutMs = 30_000) {
      const open = Promise.withResolvers<void>();
      const arrived = Promise.withResolvers<void>();
      const timer = setTimeout(
        () => arrived.reject(new Error(`api-gate: no matching request in ${timeoutMs} ms`)),
        timeoutMs,
      );
      gates.push({ match, arrived: arrived.resolve, open: open.promise });
      return {
        held: arrived.promise.finally(() => clearTimeout(timer)),
        release: () => open.resolve(),
      };
    },
    refuse(match, status) {
      const refusal = { match, status };
      refusals.push(refusal);
      return { lift: () => void refusals.splice(refusals.indexOf(refusal), 1) };
    },
    async close() {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
