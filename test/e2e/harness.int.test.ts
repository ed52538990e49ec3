/**
 * Proves the e2e harness on the reference IPAM: two node namespaces on a bridge, pods as
 * namespaces, Debian's ptp 1.1.1 + portmap with host-local, driven by the mini-libcni. If this
 * fails, the blockipam e2e results mean nothing.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Libcni, type NetworkList } from './harness/libcni.ts';
import { createTopology, inNs, netnsPath, type Topology } from './harness/netns.ts';
import { debianPtp, requirePtp } from './harness/world.ts';
import { requirePrerequisite } from '../helpers/tier.ts';

const debian = debianPtp.dir;

void describe('e2e harness with host-local under Debian ptp', () => {
  let topo: Topology;
  let tmp: string;
  let cni: Libcni;
  const list = (): NetworkList => ({
    cniVersion: '1.0.0',
    name: 'hl-net',
    plugins: [
      {
        type: 'ptp',
        capabilities: { portMappings: true },
        ipam: {
          type: 'host-local',
          subnet: '10.99.0.0/24',
          dataDir: join(tmp, 'hl'),
          routes: [{ dst: '0.0.0.0/0' }],
        },
      },
      { type: 'portmap', capabilities: { portMappings: true } },
    ],
  });
  before(() => {
    // No skip when a plugin is missing: the suite fails naming it (test/helpers/tier.ts).
    requirePtp(debianPtp);
    requirePrerequisite(join(debian, 'host-local'), "Debian ptp 1.1.1's host-local", debianPtp.howToGet);
    topo = createTopology(1, 'h');
    tmp = mkdtempSync(join(tmpdir(), 'bipam-harness-'));
    cni = new Libcni({ cniPath: [debian], cacheDir: tmp, netns: topo.nodes[0] });
  });
  after(() => {
    topo?.destroy();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  void it('ADD two pods, they ping each other, DEL frees, reverse-order DEL leaves no cache', async () => {
    const pods = ['a', 'b'].map((n) => topo.addPod(n));
    const results = [];
    for (const [i, ns] of pods.entries()) {
      results.push(
        await cni.add(list(), {
          containerID: `hl${i}`,
          netns: netnsPath(ns),
          ifname: 'eth0',
          capabilityArgs: { portMappings: [{ hostPort: 8080 + i, containerPort: 80, protocol: 'tcp' }] },
        }),
      );
    }
    const ips = results.map(
      (r) => ((r.ips as { address: string }[])[0]?.address ?? '').split('/')[0] as string,
    );
    assert.deepEqual(ips, ['10.99.0.2', '10.99.0.3']);
    const ping = inNs(pods[0] as string, 'ping', ['-c1', '-W2', ips[1] as string]);
    assert.equal(ping.status, 0, ping.stdout + ping.stderr);
    for (const [i, ns] of pods.entries())
      await cni.del(list(), { containerID: `hl${i}`, netns: netnsPath(ns), ifname: 'eth0' });
    assert.equal(cni.cached(list(), { containerID: 'hl0', ifname: 'eth0' }), undefined);
    assert.equal(existsSync(join(tmp, 'hl', 'hl-net', '10.99.0.2')), false);
  });
});
