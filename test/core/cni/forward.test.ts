/**
 * core/cni/forward.ts: which calls the TypeScript executable (and, by the same rule, the Go
 * forwarder) sends to the node agent — and that a socket path the netconf schema would refuse
 * never reaches connect(2): "@…" would be an abstract socket any process may own, a relative
 * path would resolve against the runtime's working directory, NUL would be cut by the kernel.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  directReason,
  forwardTarget,
  isSocketPath,
  MAX_FORWARD_DEPTH,
  MAX_SOCKET_PATH_BYTES,
  nestsDeeper,
  requestBytes,
} from 'blockipam/core/cni/forward';
import { callRequest, MAX_REQUEST_BYTES } from 'blockipam/core/node-ipam/protocol';

/** The CNI environment of `command`. */
const cmd = (command: string): Record<string, string> => ({
  CNI_COMMAND: command,
  CNI_CONTAINERID: 'c1',
  CNI_IFNAME: 'eth0',
});

const stdin = (ipam: Record<string, unknown>): string =>
  JSON.stringify({ cniVersion: '1.0.0', name: 'n', ipam: { type: 'blockipam', ...ipam } });

void describe('forwardTarget', () => {
  void it('forwards an ADD naming an absolute socket path, with the default budget', () => {
    const t = forwardTarget(cmd('ADD'), stdin({ agentSocket: '/run/blockipam/ipam.sock' }));
    assert.equal(t?.socket, '/run/blockipam/ipam.sock');
    assert.equal(t?.timeoutMs, 30_000);
    assert.equal(t?.cniVersion, '1.0.0');
  });
  void it('sends a socket path the schema refuses to the direct path (which names the field)', () => {
    const longest = `/${'a'.repeat(MAX_SOCKET_PATH_BYTES - 1)}`;
    assert.ok(forwardTarget(cmd('ADD'), stdin({ agentSocket: longest })), 'the longest path that fits');
    for (const agentSocket of ['@blockipam-abstract', 'a.sock', '', `${longest}a`, '/tmp/a.sock\0junk', 7])
      assert.equal(forwardTarget(cmd('ADD'), stdin({ agentSocket })), undefined, JSON.stringify(agentSocket));
    // multi-byte characters count as their UTF-8 bytes
    assert.equal(isSocketPath(`/${'é'.repeat(54)}`), false);
    assert.equal(isSocketPath(`/${'é'.repeat(53)}`), true);
  });
  void it('sends a timeoutMs of null, a fraction or out of range to the direct path', () => {
    for (const timeoutMs of [null, 99, 600_001, 1.5, '1000'])
      assert.equal(
        forwardTarget(cmd('ADD'), stdin({ agentSocket: '/s', timeoutMs })),
        undefined,
        String(timeoutMs),
      );
    assert.equal(forwardTarget(cmd('DEL'), stdin({ agentSocket: '/s', timeoutMs: 100 }))?.timeoutMs, 100);
  });
  void it('never forwards VERSION, standalone mode or a stdin that is not an object', () => {
    assert.equal(forwardTarget(cmd('VERSION'), stdin({ agentSocket: '/s' })), undefined);
    assert.equal(forwardTarget(cmd('ADD'), stdin({ agentSocket: '/s', mode: 'standalone' })), undefined);
    assert.equal(forwardTarget(cmd('ADD'), '[1]'), undefined);
    assert.equal(forwardTarget(cmd('ADD'), 'not json'), undefined);
  });
  void it("forwards a request up to the agent's MAX_REQUEST_BYTES; one byte more goes direct", () => {
    const env = cmd('GC');
    // padded with `unit`s, then topped up with 1-byte 'x's to land exactly on the bound
    const sized = (pad: string, fill = ''): string => stdin({ agentSocket: '/s', pad, fill });
    const base = requestBytes(env, sized(''));
    for (const unit of ['x', 'é', '"', '\n', '✓', '\u0001']) {
      const perUnit = requestBytes(env, sized(unit)) - base;
      const pad = unit.repeat(Math.floor((MAX_REQUEST_BYTES - base) / perUnit));
      const fill = 'x'.repeat(MAX_REQUEST_BYTES - requestBytes(env, sized(pad)));
      const exact = sized(pad, fill);
      assert.equal(requestBytes(env, exact), MAX_REQUEST_BYTES);
      assert.ok(forwardTarget(env, exact), `${JSON.stringify(unit)}: exactly the bound`);
      const over = sized(pad, `${fill}x`);
      assert.equal(forwardTarget(env, over), undefined, `${JSON.stringify(unit)}: one byte over`);
    }
    // the size is that of the line the client sends
    const s = stdin({ agentSocket: '/s', q: 'a"b\\c\u0001' });
    assert.equal(requestBytes(env, s), Buffer.byteLength(JSON.stringify(callRequest(env, s))));
    // 64 MiB of GC (the direct path's bound) is never parsed here: direct
    assert.equal(forwardTarget(env, stdin({ agentSocket: '/s', pad: 'x'.repeat(8 << 20) })), undefined);
  });
  void it("JSON nested deeper than Go's decoder reads (10,000) goes direct, as in the Go forwarder", () => {
    const deep = (levels: number): string =>
      stdin({ agentSocket: '/s' }).replace(/}$/, `,"d":${'['.repeat(levels - 1)}${']'.repeat(levels - 1)}}`);
    // the top-level object is one level
    assert.ok(forwardTarget(cmd('ADD'), deep(MAX_FORWARD_DEPTH)), 'at the limit');
    assert.equal(forwardTarget(cmd('ADD'), deep(MAX_FORWARD_DEPTH + 1)), undefined);
    // brackets inside strings (escaped quotes too) are not nesting
    assert.equal(nestsDeeper('{"a":"[[[\\"[[["}', 1), false);
    assert.equal(nestsDeeper('{"a":[{}]}', 2), true);
  });
  void it('BLOCKIPAM_DIRECT: "1" is a decision; "<errno> <socket>" says why the agent was not asked', () => {
    assert.equal(directReason('1'), undefined);
    assert.deepEqual(directReason('ECONNREFUSED /run/a b.sock'), {
      errno: 'ECONNREFUSED',
      socket: '/run/a b.sock',
    });
    assert.equal(directReason('nonsense here'), undefined);
  });
});
