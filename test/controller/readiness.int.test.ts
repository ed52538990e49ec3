/**
 * The controller's readiness gauge `blockipam_controller_ready` against its `/readyz`, with the
 * real controller process on the real API server behind test/agent/api-gate.ts: once it leads it
 * lists its watches; while the gate holds the pods LIST, /readyz answers 503 and the gauge is 0
 * (a leader still listing is not ready); once the LIST goes through, 200 and 1. Readiness is moved
 * by holding a request, never by waiting a time.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { startApiGate, type ApiGate } from '../agent/api-gate.ts';
import { eventually } from '../agent/agent-process.ts';
import { installCrds } from '../helpers/crds.ts';
import { startController } from './helpers.ts';

const LEASE = `blockipam-controller-ready-${randomBytes(3).toString('hex')}`;
let gate: ApiGate;
let stop: (() => Promise<unknown>) | undefined;

/** GETs a path of the controller's HTTP server. */
async function get(port: number, path: string): Promise<{ status: number; text: string }> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`);
  return { status: res.status, text: await res.text() };
}

/** A gauge's value (no labels but `component`) in a scrape, or undefined when absent. */
function gauge(text: string, name: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.split(' ').at(-1));
}

describe('controller readiness: /readyz and blockipam_controller_ready agree', () => {
  before(async () => {
    installCrds();
    gate = await startApiGate();
  });
  after(async () => {
    await stop?.();
    await gate.close();
  });

  test('leading, its pods LIST held: 503 and 0; listed: 200 and 1', async () => {
    const list = gate.hold(
      (method, url) => method === 'GET' && url.pathname === '/api/v1/pods' && !url.searchParams.has('watch'),
      120_000,
    );
    const controller = startController([
      ...['--kubeconfig', gate.kubeconfig, '--identity', 'ready-a'],
      ...['--metrics-host', '127.0.0.1', '--metrics-port', '0'],
      ...['--lease-namespace', 'default', '--lease-name', LEASE],
    ]);
    stop = async () => {
      controller.child.kill('SIGTERM');
      await controller.exited;
    };
    const port = await controller.port;
    await list.held; // it leads: the view's watches list
    const notReady = await get(port, '/readyz');
    assert.equal(notReady.status, 503);
    assert.match(notReady.text, /^watches: /);
    const held = (await get(port, '/metrics')).text;
    assert.equal(gauge(held, 'blockipam_controller_leader'), 1);
    assert.equal(gauge(held, 'blockipam_controller_ready'), 0);
    list.release();
    // 120 s: start-up of a Node process took > 90 s at load 30-60 (test/e2e/api-outage.int.test.ts)
    await eventually(
      'ready',
      async () => ((await get(port, '/readyz')).status === 200 ? true : undefined),
      120_000,
    );
    assert.equal(gauge((await get(port, '/metrics')).text, 'blockipam_controller_ready'), 1);
  });
});
