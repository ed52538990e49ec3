/**
 * The deletion queue end to end (docs/design-plugin.md §Deletion queue), the executable against
 * the real API server in agent mode with no agent running: a DEL whose kubeconfig carries a token
 * the API server refuses (401) answers success with the entry queued on the node and the address
 * still held; an ADD with that kubeconfig fails 105 saying the agent is away; then the agent's
 * replay (block-controller/agent/ipam/deletion-replay.ts, its service over the API server)
 * releases the address and removes the file, and a second replay of the same DEL is a no-op.
 */
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { deletionQueueDirOf, enqueueDel, queuedFiles } from 'blockipam/core/cni';
import { loadKubeconfig } from 'blockipam/core/kubeconfig';
import { createNodeIpam, datastoreInputs } from 'blockipam/core/node-ipam';
import { connectKube, createLogger, Lifecycle } from '../../block-controller/shared/index.ts';
import { startDeletionReplay } from '../../block-controller/agent/ipam/deletion-replay.ts';
import { createAgentMetrics } from '../../block-controller/agent/metrics.ts';
import {
  assertAdded,
  assertCniError,
  assertSilentSuccess,
  env,
  handle,
  NODE,
  setupSuite,
  type Suite,
} from './helpers/conformance.ts';

void describe('deletion queue: DEL with a refused credential and no agent', () => {
  let s: Suite;
  let refused = '';
  before(() => {
    s = setupSuite('agent'); // agent mode, but no agent listens: the direct path serves
    const cfg = loadKubeconfig(s.fx.kubeconfig);
    refused = join(s.tmp, 'refused.kubeconfig');
    // a token the API server does not know (an expired or Node-gone one is refused the same way)
    const token = [
      'e30',
      Buffer.from(JSON.stringify({ exp: 1_700_000_000 })).toString('base64url'),
      'x',
    ].join('.');
    writeFileSync(
      refused,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [
          {
            name: 'c',
            cluster: {
              server: cfg.server,
              ...(cfg.ca ? { 'certificate-authority-data': cfg.ca.toString('base64') } : {}),
              ...(cfg.insecureSkipTLSVerify ? { 'insecure-skip-tls-verify': true } : {}),
            },
          },
        ],
        users: [{ name: 'u', user: { token } }],
        contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
        'current-context': 'x',
      }),
    );
  });
  after(async () => await s?.teardown());
  const dir = (): string => deletionQueueDirOf(join(s.tmp, 'agent', 'ipam.sock'));
  const held = (id: string): boolean => s.fx.allocations().has(handle(id));

  void it('DEL meets 401: success, queued, still held; ADD says the agent is away', async () => {
    assertAdded(await s.run(env('ADD', 'dq-1'), s.conf('1.1.0')));
    assert.equal(held('dq-1'), true);
    const del = await s.run(
      env('DEL', 'dq-1', { CNI_ARGS: 'K8S_POD_UID=uid-dq-1' }),
      s.conf('1.1.0', { kubeconfig: refused }),
    );
    assertSilentSuccess(del);
    assert.equal(queuedFiles(dir()).length, 1);
    assert.equal(held('dq-1'), true, 'nothing released yet');
    const add = assertCniError(
      await s.run(env('ADD', 'dq-2'), s.conf('1.1.0', { kubeconfig: refused })),
      105,
    );
    assert.equal(add.msg, "the plugin's credential was refused and the node agent is away");
    assert.match(String(add.details), /HTTP 401.*its token expires at 2023-11-14T22:13:20\.000Z/s);
  });

  void it("the agent's replay releases it by handle and removes the file; again is a no-op", async () => {
    const connection = connectKube({ kubeconfig: s.fx.kubeconfig });
    const ds = connection.datastore;
    const ipam = createNodeIpam({ ds, inputs: datastoreInputs(ds) });
    const lines: Record<string, unknown>[] = [];
    const log = createLogger({
      component: 'test',
      stream: new Writable({
        write: (c: Buffer, _e, cb) => {
          lines.push(JSON.parse(c.toString()) as Record<string, unknown>);
          cb();
        },
      }),
    });
    const lifecycle = new Lifecycle(log);
    const metrics = createAgentMetrics();
    try {
      const replay = startDeletionReplay({
        dir: dir(),
        node: NODE,
        ipam: () => ipam,
        log,
        metrics,
        lifecycle,
        periodMs: 3_600_000,
      });
      await replay.pass();
      assert.equal(held('dq-1'), false, 'released');
      assert.deepEqual(queuedFiles(dir()), []);
      assert.ok(
        lines.some(
          (l) => l.message === 'queued DEL replayed' && l.released === 1 && l.handle === handle('dq-1'),
        ),
      );
      // the same DEL queued again (a runtime retried it): released already, answers 0, file goes
      enqueueDel(dir(), {
        attachment: { network: 'confnet', containerID: 'dq-1', ifname: 'eth0' },
        node: NODE,
        queuedAt: new Date().toISOString(),
        reason: 'test',
      });
      await replay.pass();
      assert.deepEqual(queuedFiles(dir()), []);
      assert.ok(lines.some((l) => l.message === 'queued DEL replayed' && l.released === 0));
      const replays = (
        await metrics.registry.getSingleMetric('blockipam_agent_deletion_queue_replays_total')?.get()
      )?.values;
      assert.equal(replays?.find((v) => v.labels.result === 'released')?.value, 2);
    } finally {
      await lifecycle.shutdown('test');
      connection.close();
    }
  });
});
