/**
 * The direct path refuses a call naming another node than its credential's before any write
 * (core's credentialNodeProblem): CNI 7 "node name mismatch", the message the agent gives for the
 * same mistake; a DEL is served for the credential's node, as the agent serves it for its own.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { servedNodeProblem } from 'blockipam/core/node-ipam';
import { fakeBackend } from '../helpers/fake-backend.ts';
import { baseEnv, invoke, netconf } from '../helpers/run-dispatch.ts';

const env = (command: string) => ({ ...baseEnv, CNI_COMMAND: command });
/** The netconf names node-a (ipam.nodeName); the credential belongs to node-b. */
const conf = (version = '1.1.0') => netconf(version, { mode: 'standalone' });

void describe('direct path: a credential of another node', () => {
  for (const command of ['ADD', 'CHECK', 'GC', 'STATUS'])
    void it(`${command}: CNI 7 naming both nodes, nothing asked of the backend`, async () => {
      const backend = { ...fakeBackend(), credentialNode: 'node-b' };
      const stdin =
        command === 'CHECK'
          ? netconf('1.1.0', { mode: 'standalone' }, { prevResult: { cniVersion: '1.1.0', ips: [] } })
          : command === 'GC'
            ? netconf('1.1.0', { mode: 'standalone' }, { 'cni.dev/valid-attachments': [] })
            : conf();
      const r = await invoke(env(command), stdin, backend);
      assert.equal(r.json?.code, 7, r.stdout);
      assert.equal(r.json?.msg, 'node name mismatch');
      assert.match(
        String(r.json?.details),
        /credential \(ipam\.kubeconfig's token\) belongs to node "node-b", but this plugin's node name is "node-a" \(ipam\.nodeName/,
      );
      // the agent's words for the same mistake end alike
      const tail = (servedNodeProblem('node-a', 'node-b') ?? '').split(' node "node-b"')[1] ?? '';
      assert.ok(String(r.json?.details).endsWith(tail), tail);
      assert.deepEqual(backend.calls, []);
    });
  void it("DEL: served for the credential's node", async () => {
    const backend = { ...fakeBackend(), credentialNode: 'node-b' };
    const r = await invoke(env('DEL'), conf(), backend);
    assert.equal(r.code, 0, r.stdout);
    assert.deepEqual(
      backend.calls.map((c) => [c.op, (c.arg as { node: string }).node]),
      [['del', 'node-b']],
    );
  });
  void it('the same node, or a credential that names none: served as called', async () => {
    for (const credentialNode of ['node-a', undefined]) {
      const backend = { ...fakeBackend(), ...(credentialNode ? { credentialNode } : {}) };
      const r = await invoke(env('ADD'), conf(), backend);
      assert.equal(r.code, 0, r.stdout);
      assert.deepEqual(
        backend.calls.map((c) => [c.op, (c.arg as { node: string }).node]),
        [['add', 'node-a']],
      );
    }
  });
});
