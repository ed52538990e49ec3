/**
 * core/cni/forward.ts: which calls the TypeScript executable (and, by the same rule, the Go
 * forwarder) sends to the node agent — and that a socket path the netconf schema would refuse
 * never reaches connect(2): "@…" would be an abstract socket any process may own, a relative
 * path would resolve against the runtime's working directory, NUL would be cut by the kernel.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { forwardTarget, isSocketPath, MAX_SOCKET_PATH_BYTES } from 'blockipam/core/cni/forward';

const stdin = (ipam: Record<string, unknown>): string =>
  JSON.stringify({ cniVersion: '1.0.0', name: 'n', ipam: { type: 'blockipam', ...ipam } });

void describe('forwardTarget', () => {
  void it('forwards an ADD naming an absolute socket path, with the default budget', () => {
    const t = forwardTarget('ADD', stdin({ agentSocket: '/run/blockipam/ipam.sock' }));
    assert.equal(t?.socket, '/run/blockipam/ipam.sock');
    assert.equal(t?.timeoutMs, 30_000);
    assert.equal(t?.cniVersion, '1.0.0');
  });
  void it('sends a socket path the schema refuses to the direct path (which names the field)', () => {
    const longest = `/${'a'.repeat(MAX_SOCKET_PATH_BYTES - 1)}`;
    assert.ok(forwardTarget('ADD', stdin({ agentSocket: longest })), 'the longest path that fits');
    for (const agentSocket of ['@blockipam-abstract', 'a.sock', '', `${longest}a`, '/tmp/a.sock\0junk', 7])
      assert.equal(forwardTarget('ADD', stdin({ agentSocket })), undefined, JSON.stringify(agentSocket));
    // multi-byte characters count as their UTF-8 bytes
    assert.equal(isSocketPath(`/${'é'.repeat(54)}`), false);
    assert.equal(isSocketPath(`/${'é'.repeat(53)}`), true);
  });
  void it('sends a timeoutMs of null, a fraction or out of range to the direct path', () => {
    for (const timeoutMs of [null, 99, 600_001, 1.5, '1000'])
      assert.equal(
        forwardTarget('ADD', stdin({ agentSocket: '/s', timeoutMs })),
        undefined,
        String(timeoutMs),
      );
    assert.equal(forwardTarget('DEL', stdin({ agentSocket: '/s', timeoutMs: 100 }))?.timeoutMs, 100);
  });
  void it('never forwards VERSION, standalone mode or a stdin that is not an object', () => {
    assert.equal(forwardTarget('VERSION', stdin({ agentSocket: '/s' })), undefined);
    assert.equal(forwardTarget('ADD', stdin({ agentSocket: '/s', mode: 'standalone' })), undefined);
    assert.equal(forwardTarget('ADD', '[1]'), undefined);
    assert.equal(forwardTarget('ADD', 'not json'), undefined);
  });
});
