/**
 * The daemon's HTTP endpoints: `/metrics` (Prometheus text format from the registry),
 * `/healthz` (liveness: the process serves requests and its loops are not stuck) and `/readyz`
 * (readiness: every check passes — for the agent, its watches have synced). Answers 200 "ok" or
 * 503 with one failing check per line; anything else is 404.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

/** A named check: returns undefined when fine, or the reason it is not. */
export type Check = () => string | undefined;

export interface HttpServerOptions {
  /** TCP port; 0 picks a free one (tests). */
  port: number;
  /** Default "0.0.0.0" (host network: Prometheus scrapes the node's address). */
  host?: string;
  registry: Registry;
  /** Liveness checks (default none: alive while the server answers). */
  live?: Readonly<Record<string, Check>>;
  /** Readiness checks. */
  ready?: Readonly<Record<string, Check>>;
}

export interface RunningHttpServer {
  /** The port actually bound. */
  readonly port: number;
  /** Stops accepting and closes idle connections. */
  close(): Promise<void>;
}

/** Starts the server; resolves once it listens. @throws (rejects) when the port cannot be bound */
export async function startHttpServer(options: HttpServerOptions): Promise<RunningHttpServer> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const answer = (status: number, body: string, type = 'text/plain; charset=utf-8'): void => {
      res.writeHead(status, { 'Content-Type': type }).end(body);
    };
    if (path === '/metrics') {
      options.registry
        .metrics()
        .then((text) => answer(200, text, options.registry.contentType))
        .catch((error: Error) => answer(500, `metrics: ${error.message}\n`));
    } else if (path === '/healthz' || path === '/readyz') {
      const failing = failingChecks((path === '/healthz' ? options.live : options.ready) ?? {});
      answer(failing.length === 0 ? 200 : 503, failing.length === 0 ? 'ok\n' : `${failing.join('\n')}\n`);
    } else answer(404, 'not found\n');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host ?? '0.0.0.0', () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      }),
  };
}

/**
 * The checks that fail now, as `<name>: <reason>` lines in the record's order (empty: all pass).
 * What `/healthz` and `/readyz` answer, and what the readiness gauges read (shared/metrics.ts
 * readinessGauge): one function, so the gauge and the probe cannot disagree.
 */
export function failingChecks(checks: Readonly<Record<string, Check>>): string[] {
  return Object.entries(checks).flatMap(([name, check]) => {
    const reason = check();
    return reason === undefined ? [] : [`${name}: ${reason}`];
  });
}
