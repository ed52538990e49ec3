// The masquerade rule on a real kernel, in namespaces this test creates (root; the host's own
// namespace is never touched): two node namespaces on a bridge, a pod namespace behind each
// (veth, a pool address of each family), a listener on the bridge namespace (the "outside
// host") and in pod b that answers each HTTP request with the peer address it saw. A pod's
// request to the outside host arrives from its node's address, both families; pod to pod across
// nodes and to a non-masquerade CIDR keeps the pod address; a pool change, a table deleted by
// hand, the uninstall signal (the table removed, no pass writes it back until resumed), the
// removal, and another table left alone throughout.
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { after, before, describe, test } from 'node:test';
import { mustParseCidr } from 'blockipam/core';
import type { IPPool } from 'blockipam/core';
import {
  MasqueradeProgrammer,
  NftTable,
  reconcileMasquerade,
  removeMasquerade,
  type MasqueradeOutcome,
  type MasqueradeView,
  type MasqueradeWritten,
} from '../../../block-controller/agent/masquerade/index.ts';
import { createTopology, sh, type Topology } from '../../e2e/harness/netns.ts';
import { requirePrerequisite } from '../../helpers/tier.ts';

const PORT = 8080;
/** Answers every request with the peer address it saw (IPv4-mapped IPv6 shown as IPv4). */
const LISTENER = `
const server = require('node:http').createServer((req, res) =>
  res.end(String(req.socket.remoteAddress).replace(/^::ffff:/, '')));
server.listen(${PORT}, '::', () => console.log('listening'));`;

const pool = (name: string, cidr: string): IPPool => ({ metadata: { name }, spec: { cidr } });
const POOLS = [pool('p4', '10.20.0.0/16'), pool('p6', 'fd20::/48')];

void describe('masquerade in network namespaces', () => {
  let topo: Topology;
  let n1: string;
  let n2: string;
  let br: string;
  let podA: string;
  let podB: string;
  const listeners: ChildProcess[] = [];
  const ipn = (ns: string, ...args: string[]): string => sh('ip', ['-n', ns, ...args]);
  const exec = (ns: string, cmd: string, ...args: string[]): string =>
    sh('ip', ['netns', 'exec', ns, cmd, ...args]);
  const table = (): NftTable => new NftTable({ command: ['ip', 'netns', 'exec', n1, 'nft'] });

  /** A pod namespace behind `node`: eth0 with `v4`/32 and `v6`/128, the node's side `host`. */
  function pod(name: string, node: string, v4: string, v6: string): string {
    const ns = topo.addPod(name);
    ipn(node, 'link', 'add', 'h-' + name, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns);
    ipn(node, 'addr', 'add', '169.254.1.1/32', 'dev', 'h-' + name);
    ipn(node, 'addr', 'add', 'fe80::1/128', 'dev', 'h-' + name, 'nodad');
    ipn(node, 'link', 'set', 'h-' + name, 'up');
    ipn(node, 'route', 'add', `${v4}/32`, 'dev', 'h-' + name);
    ipn(node, '-6', 'route', 'add', `${v6}/128`, 'dev', 'h-' + name);
    ipn(ns, 'addr', 'add', `${v4}/32`, 'dev', 'eth0');
    ipn(ns, 'addr', 'add', `${v6}/128`, 'dev', 'eth0', 'nodad');
    ipn(ns, 'link', 'set', 'eth0', 'up');
    ipn(ns, 'route', 'add', '169.254.1.1', 'dev', 'eth0');
    ipn(ns, 'route', 'add', 'default', 'via', '169.254.1.1', 'dev', 'eth0');
    ipn(ns, '-6', 'route', 'add', 'default', 'via', 'fe80::1', 'dev', 'eth0');
    return ns;
  }

  async function listen(ns: string): Promise<void> {
    const child = spawn('ip', ['netns', 'exec', ns, process.execPath, '-e', LISTENER], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    listeners.push(child);
    const lines = createInterface({ input: child.stdout });
    for await (const line of lines) if (line === 'listening') return;
    throw new Error(`the listener in ${ns} exited before listening`);
  }

  /** The address `host` saw for an HTTP request from pod a (curl; 10 s bound on a lost answer). */
  function seenBy(host: string): string {
    const url = host.includes(':') ? `http://[${host}]:${PORT}/` : `http://${host}:${PORT}/`;
    const r = spawnSync('ip', ['netns', 'exec', podA, 'curl', '-sS', '--max-time', '10', url], {
      encoding: 'utf8',
    });
    if (r.status !== 0) return `no answer (curl exit ${r.status}: ${r.stderr.trim()})`;
    return r.stdout;
  }

  before(async () => {
    requirePrerequisite(
      '/usr/sbin/nft',
      'nftables',
      'scripts/setup.sh installs it (apt-get install nftables)',
    );
    topo = createTopology(2, 'mq');
    [n1, n2] = topo.nodes as [string, string];
    br = `${topo.prefix}br`;
    // the outside host: the bridge namespace, with a route to the pools (so a packet that kept
    // its pod source would be answered too: only the source address tells masquerade apart)
    ipn(br, 'addr', 'add', '192.0.2.1/24', 'dev', 'br0');
    ipn(br, 'addr', 'add', '2001:db8::1/64', 'dev', 'br0', 'nodad');
    ipn(br, 'route', 'add', '10.20.0.0/16', 'via', '192.0.2.11');
    ipn(br, '-6', 'route', 'add', 'fd20::/48', 'via', '2001:db8::11');
    for (const [ns, i] of [
      [n1, 11],
      [n2, 12],
    ] as const) {
      ipn(ns, 'addr', 'add', `2001:db8::${i}/64`, 'dev', 'eth0', 'nodad');
      // inside the node namespace only (a namespace's own copy of the setting)
      exec(ns, 'sysctl', '-qw', 'net.ipv4.ip_forward=1', 'net.ipv6.conf.all.forwarding=1');
    }
    podA = pod('a', n1, '10.20.0.5', 'fd20::5');
    podB = pod('b', n2, '10.20.0.70', 'fd20::46');
    // the blocks' routes between the nodes, as the agents install them
    ipn(n1, 'route', 'add', '10.20.0.64/26', 'via', '192.0.2.12');
    ipn(n1, '-6', 'route', 'add', 'fd20::40/122', 'via', '2001:db8::12');
    ipn(n2, 'route', 'add', '10.20.0.0/26', 'via', '192.0.2.11');
    ipn(n2, '-6', 'route', 'add', 'fd20::/122', 'via', '2001:db8::11');
    // someone else's table in node 1, which must survive every pass and the removal
    exec(n1, 'nft', 'add table inet other; add chain inet other c { type filter hook forward priority 0; }');
    exec(n1, 'nft', 'add rule inet other c counter');
    await Promise.all([listen(br), listen(podB)]);
  });
  after(() => {
    for (const l of listeners) l.kill('SIGKILL');
    topo?.destroy();
  });
  const other = (): string =>
    exec(n1, 'nft', 'list', 'table', 'inet', 'other').replace(/packets \d+ bytes \d+/g, '');

  let last: MasqueradeWritten | undefined;
  const pass = async (
    view: MasqueradeView,
    nonMasquerade: string[] = [],
  ): Promise<Extract<MasqueradeOutcome, { status: 'unchanged' | 'written' }>> => {
    const r = await reconcileMasquerade(
      view,
      { table: table(), nonMasquerade: nonMasquerade.map(mustParseCidr) },
      last,
    );
    last = r.written;
    assert.notEqual(r.outcome.status, 'waiting');
    return r.outcome as Extract<MasqueradeOutcome, { status: 'unchanged' | 'written' }>;
  };

  void test('before the pools are listed nothing is written', async () => {
    const r = await reconcileMasquerade(
      { synced: false, pools: [] },
      { table: table(), nonMasquerade: [] },
      undefined,
    );
    assert.equal(r.outcome.status, 'waiting');
    assert.equal(await table().list(), undefined);
  });

  void test('outside the pools: the node address, both families; pod to pod: the pod address', async () => {
    const otherBefore = other();
    assert.equal((await pass({ synced: true, pools: POOLS })).why, 'start');
    assert.equal(seenBy('192.0.2.1'), '192.0.2.11');
    assert.equal(seenBy('2001:db8::1'), '2001:db8::11');
    assert.equal(seenBy('10.20.0.70'), '10.20.0.5');
    assert.equal(seenBy('fd20::46'), 'fd20::5');
    assert.equal((await pass({ synced: true, pools: POOLS })).status, 'unchanged');
    assert.equal(other(), otherBefore, 'the other table is untouched');
  });

  void test('a non-masquerade CIDR keeps the pod address', async () => {
    assert.equal((await pass({ synced: true, pools: POOLS }, ['192.0.2.0/24'])).why, 'plan');
    assert.equal(seenBy('192.0.2.1'), '10.20.0.5');
    assert.equal(seenBy('2001:db8::1'), '2001:db8::11', 'IPv6 is still masqueraded');
  });

  void test('a pool removed: its rule goes in the same write (IPv6 no longer masqueraded)', async () => {
    const o = await pass({ synced: true, pools: [POOLS[0] as IPPool] });
    assert.equal(o.why, 'plan');
    assert.doesNotMatch((await table().list()) ?? '', /ip6|fd20/);
    assert.equal(seenBy('2001:db8::1'), 'fd20::5');
    assert.equal(seenBy('192.0.2.1'), '192.0.2.11');
  });

  void test('deleted by hand: the repair pass re-creates it', async () => {
    let repaired: () => void = () => undefined;
    const seen = new Promise<void>((resolve) => (repaired = resolve));
    const m = new MasqueradeProgrammer({
      table: table(),
      nonMasquerade: [],
      debounceMs: 0,
      resyncMs: 50,
      onPass: (o) => {
        if (o.status === 'written' && o.why === 'drift') repaired();
      },
    });
    m.update({ synced: true, pools: POOLS });
    await m.flush();
    exec(n1, 'nft', 'delete', 'table', 'inet', 'blockipam');
    await seen;
    await m.stop();
    assert.equal(seenBy('192.0.2.1'), '192.0.2.11');
    assert.ok(await table().list(), 'stop() left the table');
  });

  void test('the uninstall signal: the table goes and no pass writes it back; resumed: written again', async () => {
    const otherBefore = other();
    const written: string[] = [];
    let onWritten: () => void = () => undefined;
    const m = new MasqueradeProgrammer({
      table: table(),
      nonMasquerade: [],
      debounceMs: 0,
      resyncMs: 50,
      onPass: (o) => {
        if (o.status === 'written') {
          written.push(o.why ?? '');
          onWritten();
        }
      },
    });
    m.update({ synced: true, pools: POOLS });
    await m.flush();
    assert.ok(await table().list(), 'written');
    await m.uninstall();
    assert.equal(await table().list(), undefined, 'the table is gone');
    assert.equal(seenBy('192.0.2.1'), '10.20.0.5', 'no longer masqueraded');
    // no pass after it: a pool event and the repair timer leave it absent
    const passes = written.length;
    m.update({ synced: true, pools: POOLS });
    await m.flush();
    assert.equal(written.length, passes);
    assert.equal(await table().list(), undefined, 'still gone');
    assert.equal(other(), otherBefore, 'the other table stays');
    // the DaemonSet back: the loop writes it again
    const again = new Promise<void>((resolve) => (onWritten = resolve));
    m.resume();
    await again;
    assert.equal(seenBy('192.0.2.1'), '192.0.2.11', 'masqueraded again');
    await m.stop();
    assert.ok(await table().list(), 'a plain stop keeps it');
  });

  void test('turned off: the table is removed (twice: no error when absent); the other table stays', async () => {
    const otherBefore = other();
    await removeMasquerade(table());
    await removeMasquerade(table());
    assert.equal(await table().list(), undefined);
    assert.equal(seenBy('192.0.2.1'), '10.20.0.5');
    assert.equal(other(), otherBefore);
  });
});
