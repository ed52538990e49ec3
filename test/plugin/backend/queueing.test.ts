/**
 * The direct path when the API server will not serve it (ipam-plugin/backend/queueing.ts): in
 * agent mode a DEL refused for its credential or unable to reach the API server is queued on the
 * node and answered success; one the API server rejected keeps its CNI error; standalone mode
 * queues nothing (no agent would replay it); a full queue fails the DEL naming it; an ADD whose
 * credential is refused says since when the agent has been away.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { ApiError, InvalidError, UnavailableError } from 'blockipam/core';
import {
  deletionQueueDirOf,
  enqueueDel,
  queuedFiles,
  type NetConf,
  type QueuedDel,
} from 'blockipam/core/cni';
import type { NodeIpam } from 'blockipam/core/node-ipam';
import { queueing } from '../../../ipam-plugin/backend/queueing.ts';
import type { Backend } from '../../../ipam-plugin/backend/port.ts';
import { fakeBackend } from '../helpers/fake-backend.ts';
import { baseEnv, invoke, netconf } from '../helpers/run-dispatch.ts';

const root = mkdtempSync(join(tmpdir(), 'bipam-queueing-'));
after(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const env = (command: string) => ({
  ...baseEnv,
  CNI_COMMAND: command,
  CNI_ARGS: 'K8S_POD_NAMESPACE=ns1;K8S_POD_NAME=p1;K8S_POD_UID=uid-1',
});
/** A netconf in agent mode (or standalone) with its own cacheDir, and that queue's directory. */
const setup = (mode: 'agent' | 'standalone' = 'agent') => {
  const cacheDir = join(root, `c${n++}`);
  const kubeconfig = join(cacheDir, '..', `kc${n}`);
  const ipam = {
    cacheDir,
    kubeconfig,
    ...(mode === 'agent' ? { agentSocket: join(cacheDir, 'none.sock') } : {}),
  };
  return { conf: netconf('1.1.0', ipam), dir: deletionQueueDirOf(join(cacheDir, 'none.sock')), kubeconfig };
};
/** A backend whose every ADD and DEL fails with `error`. */
const failing = (error: Error): Backend => {
  const fb = fakeBackend();
  const ipam: NodeIpam = { ...fb.ipam, add: () => Promise.reject(error), del: () => Promise.reject(error) };
  return { ...fb, ipam };
};
const unauthorized = () =>
  new ApiError('GET /apis/blockipam.io/v1/ipamblocks: Unauthorized', 401, { reason: 'Unauthorized' });
const entries = (dir: string): QueuedDel[] =>
  queuedFiles(dir).map((f) => JSON.parse(readFileSync(join(dir, f), 'utf8')) as QueuedDel);

void describe('DEL the API server will not serve', () => {
  // 401 from an expired or Node-gone token; the API server unreachable
  for (const [name, error] of [
    ['401', unauthorized()],
    ['unreachable', new UnavailableError('connect ECONNREFUSED 127.0.0.1:6443')],
  ] as const)
    void it(`${name}: queued with the whole call, answered success`, async () => {
      const s = setup();
      const r = await invoke(env('DEL'), s.conf, failing(error));
      assert.equal(r.code, 0, r.stdout);
      assert.equal(r.stdout, '');
      const [e, ...rest] = entries(s.dir);
      assert.equal(rest.length, 0);
      assert.deepEqual(
        { attachment: e?.attachment, node: e?.node, podUID: e?.podUID },
        {
          attachment: { network: 'net1', containerID: 'ctr1', ifname: 'eth0' },
          node: 'node-a',
          podUID: 'uid-1',
        },
      );
      assert.match(r.stderr, /DEL not served: queued for the node agent/);
    });
  void it('a request the API server rejected keeps its CNI error and queues nothing', async () => {
    const s = setup();
    const r = await invoke(env('DEL'), s.conf, failing(new InvalidError('spec.allocations: Invalid value')));
    assert.equal(r.json?.code, 106, r.stdout);
    assert.deepEqual(queuedFiles(s.dir), []);
  });
  void it('standalone mode: no agent would replay it, so it fails as before', async () => {
    const s = setup('standalone');
    const r = await invoke(env('DEL'), s.conf, failing(unauthorized()));
    assert.equal(r.json?.code, 105, r.stdout);
    assert.deepEqual(queuedFiles(s.dir), []);
  });
  void it('a full queue fails the DEL with a message naming the queue, dropping nothing', async () => {
    const s = setup();
    const conf = { mode: 'agent', agentSocket: join(s.dir, '..', 'none.sock') } as NetConf;
    enqueueDel(s.dir, {
      attachment: { network: 'net1', containerID: 'x', ifname: 'eth0' },
      node: 'node-a',
      queuedAt: '',
      reason: '',
    });
    // the mapped failure the direct path would throw
    const mapped = queueing(
      conf,
      { log: () => undefined } as never,
      async () => {
        const { directFailure } = await import('../../../ipam-plugin/backend/direct-client.ts');
        throw directFailure('DEL', unauthorized());
      },
      { max: 1 },
    );
    const call = { attachment: { network: 'net1', containerID: 'y', ifname: 'eth0' }, node: 'node-a' };
    await assert.rejects(mapped(call), (e: unknown) => {
      const c = e as { code: number; message: string; details: string };
      return c.code === 11 && /deletion queue is full/.test(c.message) && c.details.includes(s.dir);
    });
    assert.equal(queuedFiles(s.dir).length, 1);
  });
});

void describe('ADD with the credential refused and no agent', () => {
  void it('105 saying the credential was refused, since when the agent is away, and what to do', async () => {
    const s = setup();
    const exp = Date.UTC(2026, 0, 2, 3, 4, 5) / 1000;
    const token = ['e30', Buffer.from(JSON.stringify({ exp })).toString('base64url'), 'sig'].join('.');
    writeFileSync(
      s.kubeconfig,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'c', cluster: { server: 'https://127.0.0.1:6443' } }],
        users: [{ name: 'u', user: { token } }],
        contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
        'current-context': 'x',
      }),
    );
    const written = new Date(Date.UTC(2026, 0, 2, 2, 34, 5));
    utimesSync(s.kubeconfig, written, written);
    const r = await invoke(env('ADD'), s.conf, failing(unauthorized()));
    assert.equal(r.json?.code, 105, r.stdout);
    assert.equal(r.json?.msg, "the plugin's credential was refused and the node agent is away");
    const details = String(r.json?.details);
    assert.match(details, /credentials not accepted \(HTTP 401/);
    assert.match(
      details,
      /last wrote it at 2026-01-02T02:34:05\.000Z, its token expires at 2026-01-02T03:04:05\.000Z/,
    );
    assert.match(details, /--field-selector spec\.nodeName=node-a/);
  });
});
