/**
 * block-controller/shared without an API server: JSON log lines, the HTTP endpoints, shutdown.
 */
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { describe, test } from 'node:test';
import type { Registry } from 'prom-client';
import { observeAgentReady } from '../../block-controller/agent/metrics.ts';
import { observeControllerReady } from '../../block-controller/controller/metrics.ts';
import {
  createLogger,
  createMetrics,
  errorFields,
  F,
  failingChecks,
  Lifecycle,
  startHttpServer,
} from '../../block-controller/shared/index.ts';

function capture(level?: 'info'): {
  log: ReturnType<typeof createLogger>;
  lines: () => Record<string, unknown>[];
} {
  const stream = new PassThrough();
  const chunks: string[] = [];
  stream.on('data', (chunk: Buffer) => chunks.push(chunk.toString('utf8')));
  // level not given: debug; 'info': the logger's default
  const log = createLogger({ component: 'test', ...(level ? {} : { level: 'debug' }), stream });
  const lines = (): Record<string, unknown>[] =>
    chunks
      .join('')
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  return { log, lines };
}

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('log', () => {
  test('one JSON object per line with level, message, timestamp, component and the fields', async () => {
    const { log, lines } = capture();
    log.info('block claimed', { [F.node]: 'n1', [F.block]: '10-0-0-0-26' });
    log.warn('failed', errorFields(new TypeError('boom')));
    await tick();
    const [first, second] = lines();
    assert.equal(first?.level, 'info');
    assert.equal(first?.message, 'block claimed');
    assert.equal(first?.component, 'test');
    assert.equal(first?.node, 'n1');
    assert.equal(first?.block, '10-0-0-0-26');
    assert.match(String(first?.timestamp), /^\d{4}-\d\d-\d\dT/);
    assert.deepEqual([second?.error, second?.errorName], ['boom', 'TypeError']);
  });

  test('debug lines are dropped at level info (the default)', async () => {
    const { log, lines } = capture('info');
    log.debug('hidden');
    log.info('shown');
    await tick();
    assert.deepEqual(
      lines().map((l) => l.message),
      ['shown'],
    );
  });
});

describe('http server and readiness gauges', () => {
  // /metrics, /healthz, /readyz (503 naming each failing check), 404 elsewhere; the controller's
  // and the agent's gauges read the checks /readyz answers from: each step compares the probe's
  // answer with the gauge in the same server's /metrics.
  const gauges: [string, (registry: Registry, failing: () => readonly string[]) => void, RegExp][] = [
    [
      'blockipam_controller_ready',
      (registry, failing) => observeControllerReady(registry, failing),
      /^blockipam_controller_ready\{component="test"\} (\d)$/m,
    ],
    [
      'blockipam_agent_ready{node}',
      (registry, failing) => observeAgentReady({ registry }, 'n1', failing),
      /^blockipam_agent_ready\{node="n1",component="test"\} (\d)$/m,
    ],
  ];
  for (const [name, observe, line] of gauges)
    test(`${name} is 1 exactly while /readyz answers 200`, async () => {
      const { registry, apiErrors } = createMetrics('test');
      apiErrors.inc({ operation: 'claim', reason: 'UnavailableError' });
      const state = { synced: false, installed: false };
      const ready = {
        watches: () => (state.synced ? undefined : 'not synced'),
        install: () => (state.installed ? undefined : 'not installed'),
      };
      observe(registry, () => failingChecks(ready));
      const server = await startHttpServer({ port: 0, host: '127.0.0.1', registry, ready });
      try {
        const get = async (path: string): Promise<[number, string]> => {
          const res = await fetch(`http://127.0.0.1:${server.port}${path}`);
          return [res.status, await res.text()];
        };
        const [, text] = await get('/metrics');
        assert.match(
          text,
          /blockipam_api_errors_total\{operation="claim",reason="UnavailableError",component="test"\} 1/,
        );
        assert.match(text, /blockipam_process_resident_memory_bytes/);
        assert.deepEqual(await get('/healthz'), [200, 'ok\n']);
        assert.equal((await get('/nope'))[0], 404);
        assert.deepEqual(await get('/readyz'), [503, 'watches: not synced\ninstall: not installed\n']);
        for (const [synced, installed] of [
          [false, false],
          [true, false],
          [true, true],
          [false, true],
        ] as const) {
          Object.assign(state, { synced, installed });
          const [status] = await get('/readyz');
          const gauge = line.exec((await get('/metrics'))[1])?.[1];
          assert.equal(gauge, status === 200 ? '1' : '0', `synced ${synced}, installed ${installed}`);
          assert.equal(status, synced && installed ? 200 : 503);
        }
      } finally {
        await server.close();
      }
    });
});

describe('lifecycle', () => {
  test('aborts the signal, waits for in-flight writes, then runs stop hooks last-first', async () => {
    const { log } = capture();
    const life = new Lifecycle(log);
    const order: string[] = [];
    let release: () => void = () => {};
    const write = new Promise<void>((resolve) => (release = resolve)).then(() => order.push('write'));
    void life.track(write);
    life.onStop('watches', () => void order.push('watches'));
    life.onStop('server', () => void order.push('server'));
    const done = life.shutdown('test');
    assert.equal(life.signal.aborted, true);
    await tick();
    assert.deepEqual(order, [], 'hooks wait for the in-flight write');
    release();
    assert.equal(await done, true);
    assert.deepEqual(order, ['write', 'server', 'watches']);
    assert.equal(await life.shutdown('again'), true, 'shutdown runs once');
    assert.equal(order.length, 3);
  });

  test('a write that outlives the drain timeout, or a failing hook, makes the shutdown unclean', async () => {
    const { log, lines } = capture();
    const life = new Lifecycle(log, { drainTimeoutMs: 20 });
    void life.track(new Promise(() => {}));
    let ran = false;
    life.onStop('watches', () => void (ran = true));
    assert.equal(await life.shutdown('test'), false);
    assert.equal(ran, true, 'hooks still run');
    const failing = new Lifecycle(log);
    failing.onStop('broken', () => Promise.reject(new Error('nope')));
    assert.equal(await failing.shutdown('test'), false);
    await tick();
    assert.ok(lines().some((l) => l.message === 'stop hook failed' && l.error === 'nope'));
  });
});
