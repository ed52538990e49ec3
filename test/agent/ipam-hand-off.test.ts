/**
 * The hand-off between the Go forwarder and the agent (docs/design-agent.md §IPAM server, "At
 * most one allocator"), with a stall injected at each step: the real forwarder, the agent's real
 * server (block-controller/agent/ipam/server.ts, its `pause` hook) over a recording service, and
 * a stand-in direct path that records that it ran. In every case at most one of the agent and
 * the direct path allocates, and the client answers.
 */
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { copyFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { after, describe, test } from 'node:test';
import type { AddOutcome, NodeIpam } from 'blockipam/core/node-ipam';
import { startIpamServer, type HandOffStep } from '../../block-controller/agent/ipam/server.ts';
import { createAgentMetrics } from '../../block-controller/agent/metrics.ts';
import { createLogger } from '../../block-controller/shared/index.ts';
import { ensureForwarder, runPlugin } from '../plugin/helpers/plugin-exe.ts';

const root = mkdtempSync(join(tmpdir(), 'hand-off-'));
const log = createLogger({ component: 'test', stream: new Writable({ write: (_c, _e, cb) => cb() }) });
const bin = join(root, 'bin');
mkdirSync(bin);
copyFileSync(ensureForwarder(), join(bin, 'blockipam'));
const directRan = join(root, 'direct-ran');
// the direct path: records that it ran (and why), answers an ADD result
writeFileSync(
  join(bin, 'blockipam-direct'),
  `#!/bin/sh\necho "$BLOCKIPAM_DIRECT" >> ${directRan}\necho '{"cniVersion":"1.0.0","ips":[{"address":"10.9.9.9/26"}]}'\n`,
);
chmodSync(join(bin, 'blockipam-direct'), 0o755);

const result: AddOutcome = { kind: 'allocated', ips: [{ address: '10.1.0.2/26', gateway: '10.1.0.1' }] };

/** A gate a step waits at: `reached` once something waits, `open()` lets it through. */
function gate(): { wait: () => Promise<void>; reached: Promise<void>; open: () => void } {
  const opened = Promise.withResolvers<void>();
  const reached = Promise.withResolvers<void>();
  return {
    wait: () => (reached.resolve(), opened.promise),
    reached: reached.promise,
    open: () => opened.resolve(),
  };
}

/**
 * An ADD through the forwarder with `ipam.timeoutMs` against a server stalled at `step` (or, for
 * 'write', inside the service between its re-check of the signal and its write) until the
 * forwarder has answered. @returns what the client answered, and who allocated
 */
async function stalledAt(step: HandOffStep | 'check' | 'write', timeoutMs: number) {
  const dir = mkdtempSync(join(root, 'case-'));
  const path = join(dir, 'ipam.sock');
  rmSync(directRan, { force: true });
  const stall = gate();
  const allocated: string[] = [];
  let started = 0;
  const service: NodeIpam = {
    add: async (_call, signal) => {
      started += 1;
      if (step === 'check') await stall.wait(); // stalled before its re-check
      if (signal.aborted) throw signal.reason; // the re-check core's batching datastore makes
      if (step === 'write') await stall.wait(); // stalled between re-check and write
      allocated.push('agent');
      return result;
    },
    del: () => Promise.resolve({ released: 0 }),
    check: () => Promise.resolve({ kind: 'ok' }),
    gc: () => Promise.resolve({ released: [], errors: [], aliveElsewhere: [] }),
    status: () => Promise.resolve({ kind: 'ready' }),
  };
  let served!: () => void;
  const connectionDone = new Promise<void>((resolve) => (served = resolve));
  const metrics = createAgentMetrics();
  const inc = metrics.ipamRequests.inc.bind(metrics.ipamRequests);
  metrics.ipamRequests.inc = ((...a: Parameters<typeof inc>) => (inc(...a), served())) as typeof inc;
  const server = await startIpamServer({
    path,
    node: 'n1',
    ipam: () => service,
    serves: () => undefined,
    log,
    metrics,
    pause: (at) => (at === step ? stall.wait() : undefined),
  });
  const conf = JSON.stringify({
    cniVersion: '1.0.0',
    name: 'net',
    type: 'ptp',
    ipam: { type: 'blockipam', nodeName: 'n1', agentSocket: path, timeoutMs },
  });
  const env = {
    CNI_COMMAND: 'ADD',
    CNI_CONTAINERID: 'c1',
    CNI_NETNS: '/var/run/netns/c1',
    CNI_IFNAME: 'eth0',
    CNI_PATH: '/opt/cni/bin',
  };
  const client = await runPlugin(env, conf, join(bin, 'blockipam'));
  await stall.reached;
  stall.open(); // the agent goes on only once its client has answered
  await connectionDone;
  await server.close(1000);
  const direct = existsSync(directRan) ? readFileSync(directRan, 'utf8').trim().split('\n') : [];
  if (direct.length > 0) allocated.push('direct');
  return { client, allocated, direct, started };
}

describe('the hand-off, a stall at each step', () => {
  after(() => rmSync(root, { recursive: true, force: true }));

  for (const step of ['accepted', 'read'] as const)
    test(`stalled at "${step}" (before READY): the direct path serves; the agent starts nothing`, async () => {
      const { client, allocated, direct, started } = await stalledAt(step, 10_000);
      assert.equal(started, 0, 'the agent started nothing');
      assert.equal(client.status, 0, client.stdout);
      assert.match(client.stdout, /10\.9\.9\.9/);
      assert.deepEqual(allocated, ['direct']);
      assert.match(direct[0] ?? '', /no READY within/);
    });

  test('stalled after READY past the deadline: the client, committed, answers CNI 11; nothing allocated', async () => {
    const { client, allocated, started } = await stalledAt('ready', 300);
    assert.equal(started, 0, 'the agent started nothing');
    assert.equal(client.status, 1);
    assert.match(client.stdout, /"code":11.*none within ipam\.timeoutMs.*"msg":"node agent: no answer"/);
    assert.deepEqual(allocated, []);
  });

  test("stalled before the agent's re-check: the signal has fired, the change is given up", async () => {
    const { client, allocated } = await stalledAt('check', 300);
    assert.equal(client.status, 1);
    assert.match(client.stdout, /"code":11/);
    assert.deepEqual(allocated, []);
  });

  test('stalled between re-check and write (the residual window): the agent alone writes, late', async () => {
    const { client, allocated } = await stalledAt('write', 300);
    assert.equal(client.status, 1, 'the client gave up: the runtime DELs the handle');
    assert.match(client.stdout, /"code":11/);
    assert.deepEqual(allocated, ['agent'], 'the direct path did not run: at most one allocator');
  });
});
