/**
 * End to end under ptp (issue 4 item 4), as root in namespaces created here: two "node"
 * namespaces on a bridge, pods as namespaces, the conflist [ptp, portmap] with blockipam as
 * IPAM, driven by the mini-libcni — once with Debian's ptp 1.1.1 (CNI 1.0.0) and once with the
 * current upstream ptp (CNI 1.1.0). The API server is the real one, reached from each node
 * through a loopback forwarder that a test can stop.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { checkBlockInvariants } from 'blockipam/core';
import { fixture, type Fixture } from '../plugin/helpers/cluster.ts';
import { pluginPath } from '../plugin/helpers/plugin-exe.ts';
import { PluginError } from './harness/libcni.ts';
import { inNs, netnsPath } from './harness/netns.ts';
import { createWorld, currentPtp, debianPtp, type PtpFlavour, type World } from './harness/world.ts';

type Ip = { address: string; gateway: string };
const flavours: [PtpFlavour | (() => PtpFlavour), string][] = [
  [debianPtp, 'e2d'],
  [currentPtp, 'e2c'],
];

for (const [flavourOrFn, tag] of flavours) {
  const ptp = typeof flavourOrFn === 'function' ? flavourOrFn() : flavourOrFn;
  // No skip when its ptp is missing: createWorld fails the suite naming it (test/helpers/tier.ts).
  void describe(`e2e with ${ptp.label} (CNI ${ptp.cniVersion})`, () => {
    let fx: Fixture;
    let w: World;
    const pods = new Map<
      string,
      { node: number; ip: Ip; rt: { containerID: string; netns: string; ifname: string } }
    >();
    before(async () => {
      fx = fixture();
      fx.pool(`${tag}-v4`, tag === 'e2d' ? '10.210.0.0/16' : '10.211.0.0/16', 26);
      w = await createWorld(2, ptp, tag);
    });
    after(async () => {
      await w?.destroy();
      fx?.cleanup();
    });
    const ipam = (): Record<string, unknown> => ({ ipv4Pools: [`${tag}-v4`] });
    const handle = (id: string): string => `${w.conflist(0).name}.${id}.eth0`;
    async function addPod(name: string, node: number): Promise<Ip> {
      const rt = { containerID: `${tag}-${name}`, netns: netnsPath(w.topo.addPod(name)), ifname: 'eth0' };
      const res = await w.cni(node).add(w.conflist(node, ipam()), rt);
      const ip = (res.ips as Ip[])[0] as Ip;
      pods.set(name, { node, ip, rt });
      return ip;
    }
    const podNs = (name: string): string => `${w.topo.prefix}p-${name}`;

    void it("pods get addresses from their node's affine block, gateway on the host veth", async () => {
      const a = await addPod('a', 0);
      const b = await addPod('b', 0);
      const c = await addPod('c', 1);
      for (const [ip, node] of [
        [a, 0],
        [b, 0],
        [c, 1],
      ] as const) {
        const block = fx.blocks().find((bl) => ipInCidr(ip.address, bl.spec.cidr));
        assert.equal(
          block?.spec.affinity,
          w.nodeName(node),
          `${ip.address} in a block of ${w.nodeName(node)}`,
        );
        assert.equal(ip.address.split('/')[1], '26');
      }
      assert.match(
        inNs(w.topo.nodes[0] as string, 'ip', ['-o', 'addr']).stdout,
        new RegExp(`inet ${a.gateway.replace(/\./g, '\\.')}/32`),
      );
      assert.match(
        inNs(podNs('a'), 'ip', ['-o', 'addr', 'show', 'eth0']).stdout,
        new RegExp(`inet ${a.address.replace(/\./g, '\\.')}`),
      );
    });
    void it('pods on one node ping each other', () => {
      const b = pods.get('b')?.ip.address.split('/')[0] as string;
      const a = pods.get('a')?.ip.address.split('/')[0] as string;
      const ab = inNs(podNs('a'), 'ping', ['-c', '1', '-W', '2', b]);
      assert.equal(ab.status, 0, ab.stdout + ab.stderr);
      const ba = inNs(podNs('b'), 'ping', ['-c', '1', '-W', '2', a]);
      assert.equal(ba.status, 0, ba.stdout + ba.stderr);
    });
    void it('DEL frees the allocation and removes the veth', async () => {
      const b = pods.get('b');
      assert.ok(b);
      await w.cni(0).del(w.conflist(0, ipam()), b.rt);
      assert.equal(fx.allocations().has(handle(b.rt.containerID)), false);
      assert.doesNotMatch(inNs(podNs('b'), 'ip', ['-o', 'link']).stdout, /eth0/);
      pods.delete('b');
    });
    void it('GC frees stale allocations of the node and keeps live ones', async () => {
      const stale = await runInNode(
        w,
        0,
        'ADD',
        `${tag}-stale`,
        w.conflist(0, ipam()).plugins[0] as Record<string, unknown>,
        {},
      );
      assert.equal(stale.status, 0, stale.stdout);
      const live = [...pods.entries()]
        .filter(([, p]) => p.node === 0)
        .map(([, p]) => ({ containerID: p.rt.containerID, ifname: 'eth0' }));
      const gc = await runInNode(
        w,
        0,
        'GC',
        '',
        w.conflist(0, ipam()).plugins[0] as Record<string, unknown>,
        { 'cni.dev/valid-attachments': live },
        '1.1.0',
      );
      assert.equal(gc.status, 0, gc.stdout);
      const held = fx.allocations();
      assert.equal(held.has(handle(`${tag}-stale`)), false);
      assert.equal(held.has(handle(`${tag}-a`)), true);
      assert.equal(held.has(handle(`${tag}-c`)), true, 'the other node is untouched');
    });
    void it('API server unreachable: ADD fails with code 11; DEL fails with code 11 and loses nothing; DEL works again after', async () => {
      const a = pods.get('a');
      assert.ok(a);
      await w.stopApi(0);
      try {
        await assert.rejects(addPod('d', 0), (e) => e instanceof PluginError && e.code === 11);
        await assert.rejects(
          w.cni(0).del(w.conflist(0, ipam()), a.rt),
          (e) => e instanceof PluginError && e.code === 11,
        );
        assert.equal(fx.allocations().has(handle(a.rt.containerID)), true, 'allocation kept');
        assert.ok(w.cni(0).cached(w.conflist(0, ipam()), a.rt), 'libcni cache kept for the retry');
      } finally {
        await w.startApi(0);
      }
      await w.cni(0).del(w.conflist(0, ipam()), a.rt);
      assert.equal(fx.allocations().has(handle(a.rt.containerID)), false);
      assert.equal(fx.allocations().has(handle(`${tag}-d`)), false);
      pods.delete('a');
    });
    void it('SIGKILL mid-ADD leaves nothing that a later ADD, DEL or GC cannot clean', async (t) => {
      const conf = w.conflist(0, ipam()).plugins[0] as Record<string, unknown>;
      const killed: string[] = [];
      // Kill times sweep 10..250 ms, then keep growing (a slow machine) until some kill lands
      // after the allocation was stored, so both kinds of leftovers are exercised.
      const stored = (): boolean => killed.some((id) => fx.allocations().has(handle(id)));
      for (let delay = 10; delay <= 250 || (delay <= 5000 && !stored()); delay += delay < 250 ? 20 : 250) {
        const id = `${tag}-k${delay}`;
        killed.push(id);
        await runInNode(w, 0, 'ADD', id, conf, {}, undefined, delay);
      }
      const leftover = fx.allocations();
      const allocatedBeforeKill = killed.filter((id) => leftover.has(handle(id))).length;
      t.diagnostic(
        `${killed.length} ADDs SIGKILLed at 10 ms and later; ${allocatedBeforeKill} had stored their allocation`,
      );
      assert.ok(allocatedBeforeKill > 0, 'some kills came after the allocation was stored');
      const after1 = await addPod('e', 0);
      assert.match(after1.address, /\/26$/, 'a later ADD gets an address (no stale lock)');
      for (const id of killed.slice(0, killed.length / 2))
        assert.equal((await runInNode(w, 0, 'DEL', id, conf, {})).status, 0);
      const live = [...pods.values()]
        .filter((p) => p.node === 0)
        .map((p) => ({ containerID: p.rt.containerID, ifname: 'eth0' }));
      assert.equal(
        (await runInNode(w, 0, 'GC', '', conf, { 'cni.dev/valid-attachments': live }, '1.1.0')).status,
        0,
      );
      const held = fx.allocations();
      for (const id of killed) assert.equal(held.has(handle(id)), false, `${id} cleaned`);
      assert.equal(held.has(handle(`${tag}-e`)), true);
      for (const block of fx.blocks()) assert.deepEqual(checkBlockInvariants(block), []);
    });
  });
}

/** IPv4 only: is `address` (CIDR text) inside `cidr`? */
function ipInCidr(address: string, cidr: string): boolean {
  const n = (t: string): number => t.split('.').reduce((acc, o) => acc * 256 + Number(o), 0);
  const [base, len] = cidr.split('/');
  const size = 2 ** (32 - Number(len));
  const ip = n(address.split('/')[0] as string);
  return ip >= n(base as string) && ip < n(base as string) + size;
}

/**
 * Runs blockipam directly inside node i (as ptp would exec it), optionally SIGKILLing it after
 * `killAfterMs`. `version` overrides the config's cniVersion (GC needs 1.1.0).
 */
function runInNode(
  w: World,
  i: number,
  command: string,
  id: string,
  plugin: Record<string, unknown>,
  extra: Record<string, unknown>,
  version?: string,
  killAfterMs?: number,
): Promise<{ status: number | null; stdout: string }> {
  const list = w.conflist(i);
  const conf = { ...plugin, name: list.name, cniVersion: version ?? list.cniVersion, ...extra };
  const attach =
    id === ''
      ? { CNI_CONTAINERID: '', CNI_IFNAME: '', CNI_NETNS: '' }
      : { CNI_CONTAINERID: id, CNI_IFNAME: 'eth0', CNI_NETNS: '/var/run/netns/none' };
  const env = { ...process.env, CNI_COMMAND: command, CNI_PATH: '/x', CNI_ARGS: '', ...attach };
  return new Promise((resolve) => {
    const child = spawn('ip', ['netns', 'exec', w.topo.nodes[i] as string, pluginPath], {
      env,
      stdio: ['pipe', 'pipe', 'ignore'],
    });
    let stdout = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    if (killAfterMs !== undefined) setTimeout(() => child.kill('SIGKILL'), killAfterMs);
    child.on('close', (status) => resolve({ status, stdout }));
    child.stdin.end(JSON.stringify(conf));
  });
}
