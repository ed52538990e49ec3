/**
 * Conformance cases 36–43: interop with Debian's ptp 1.1.1 (CNI ≤ 1.0.0), run as
 * root in a node namespace created here, driven by the mini-libcni (test/e2e/harness).
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { inNs, netnsPath } from '../e2e/harness/netns.ts';
import { PluginError, type NetworkList } from '../e2e/harness/libcni.ts';
import { createWorld, debianPtp, type World } from '../e2e/harness/world.ts';
import { assertAdded, firstAddress, startSuite, suiteModes, type Suite } from './helpers/conformance.ts';
import { runPlugin } from './helpers/plugin-exe.ts';

type Ip = { address: string; gateway: string; interface?: number };

// No skip when Debian's ptp is missing: createWorld fails the suite naming it (test/helpers/tier.ts).
for (const mode of suiteModes)
  void describe(`CNI conformance: interop with Debian ptp 1.1.1 (cases 36–43) [${mode}]`, () => {
    let s: Suite;
    let w: World;
    before(async () => {
      s = await startSuite(mode);
      w = await createWorld(1, debianPtp, 'cp', s.pluginDir);
    });
    after(async () => {
      await w?.destroy();
      await s?.teardown();
    });
    const pools = { ipv4Pools: ['conf-v4'], ipv6Pools: ['conf-v6'] };
    const ptpOnly = (version = '1.0.0', ipam: Record<string, unknown> = {}): NetworkList => {
      const l = w.conflist(0, { ...pools, ...s.modeIpam, ...ipam });
      return { ...l, cniVersion: version, plugins: [l.plugins[0] as Record<string, unknown>] };
    };
    const rt = (id: string, pod: string) => ({
      containerID: id,
      netns: netnsPath(w.topo.addPod(pod)),
      ifname: 'eth0',
    });
    /** The plugin's `logFile` lines and the agent's log lines (as JSON, `msg` for its `message`). */
    const fileLog = (): string[] =>
      existsSync(w.logFile) ? readFileSync(w.logFile, 'utf8').split('\n') : [];
    const agentLog = (): string[] =>
      (s.agent?.lines ?? []).map(({ message, ...l }) => JSON.stringify({ msg: message, ...l }));
    const ipamLog = (): string[] => [...fileLog(), ...agentLog()];
    /** The `done` lines of a call: in the plugin's log file, else (a forwarder that logs nothing) the agent's. */
    const logLines = (id: string, cmd: string) => {
      const done = (l: string): boolean =>
        l.includes(`"cmd":"${cmd}"`) && l.includes(`"containerID":"${id}"`) && l.includes('"msg":"done"');
      const inFile = fileLog().filter(done);
      return inFile.length > 0 ? inFile : agentLog().filter(done);
    };
    const held = (id: string) => s.fx.allocations().has(`${w.conflist(0).name}.${id}.eth0`);

    void it('case 36: ADD via ptp: pod eth0 holds the address, host veth the gateway/32, routes as ptp sets them, interfaces in the result', async () => {
      const r = rt('c36', 'c36');
      const res = await w.cni(0).add(ptpOnly(), r);
      const [ip] = res.ips as Ip[];
      assert.equal((res.interfaces as unknown[]).length, 2);
      assert.equal(ip?.interface, 1);
      const pod = w.topo.prefix + 'p-c36';
      assert.match(
        inNs(pod, 'ip', ['-o', 'addr', 'show', 'eth0']).stdout,
        new RegExp(`inet ${ip?.address.replace(/\./g, '\\.')}`),
      );
      assert.match(
        inNs(w.topo.nodes[0] as string, 'ip', ['-o', 'addr']).stdout,
        new RegExp(`inet ${ip?.gateway.replace(/\./g, '\\.')}/32`),
      );
      const routes = inNs(pod, 'ip', ['route']).stdout;
      assert.match(routes, new RegExp(`default via ${ip?.gateway}`));
      assert.match(routes, new RegExp(`${ip?.gateway} dev eth0 scope link`));
      await w.cni(0).del(ptpOnly(), r);
    });
    void it('case 37: the IPAM result carries the request cniVersion (0.3.1, 0.4.0, 1.0.0 all accepted by ptp)', async () => {
      for (const v of ['0.3.1', '0.4.0', '1.0.0']) {
        const r = rt(`c37-${v.replace(/\./g, '')}`, `c37-${v.replace(/\./g, '')}`);
        const res = await w.cni(0).add(ptpOnly(v), r);
        assert.equal(res.cniVersion, v);
        await w.cni(0).del(ptpOnly(v), r);
      }
      const direct = assertAdded(
        await runPlugin(
          {
            CNI_COMMAND: 'ADD',
            CNI_CONTAINERID: 'c37d',
            CNI_NETNS: '/x',
            CNI_IFNAME: 'eth0',
            CNI_PATH: '/x',
          },
          s.conf('1.0.0'),
        ),
      );
      assert.equal(direct.cniVersion, '1.0.0');
    });
    void it('case 38: an IPAM error (code 11, API server unreachable) comes out of ptp unchanged', async () => {
      await w.stopApi(0);
      try {
        await assert.rejects(
          // the direct path in both modes: the agent runs outside the node's namespace and still
          // reaches the API server (what is checked is ptp passing the IPAM's error on)
          w.cni(0).add(ptpOnly('1.0.0', { mode: 'standalone' }), rt('c38', 'c38')),
          (e) =>
            e instanceof PluginError &&
            e.plugin === 'ptp' &&
            e.code === 11 &&
            /datastore unreachable/.test(e.details),
        );
      } finally {
        await w.startApi(0);
      }
    });
    void it('case 39: ptp DEL after the netns is gone: IPAM DEL runs and succeeds, ptp exits 0', async () => {
      const r = rt('c39', 'c39');
      await w.cni(0).add(ptpOnly(), r);
      w.topo.deletePod('c39');
      await w.cni(0).del(ptpOnly(), r);
      assert.equal(held('c39'), false);
      assert.equal(logLines('c39', 'DEL').length, 1);
    });
    void it('case 40: ptp ADD twice: the second fails, the first pod keeps its address', async () => {
      const r = rt('c40', 'c40');
      const first = await w.cni(0).add(ptpOnly(), r);
      await assert.rejects(w.cni(0).add(ptpOnly(), r), (e) => e instanceof PluginError && e.code === 100);
      assert.equal(held('c40'), true);
      const addr = (first.ips as Ip[])[0]?.address ?? '';
      assert.match(
        inNs(w.topo.prefix + 'p-c40', 'ip', ['-o', 'addr', 'show', 'eth0']).stdout,
        new RegExp(addr.replace(/\./g, '\\.')),
      );
      await w.cni(0).del(ptpOnly(), r);
    });
    void it('case 41: [ptp, portmap]: portmap gets the IPAM address in prevResult; DEL runs portmap then ptp; IPAM sees one DEL', async () => {
      const r = {
        ...rt('c41', 'c41'),
        capabilityArgs: { portMappings: [{ hostPort: 18080, containerPort: 80, protocol: 'tcp' }] },
      };
      const list = w.conflist(0, { ...pools, ...s.modeIpam });
      const res = await w.cni(0).add(list, r);
      const allocated =
        ipamLog().find((l) => l.includes('"containerID":"c41"') && l.includes('"msg":"allocated"')) ?? '';
      assert.ok(
        allocated.includes(`${firstAddress(res)}/`),
        'the chain result (portmap output) holds the IPAM address',
      );
      await w.cni(0).del(list, r);
      assert.equal(logLines('c41', 'DEL').length, 1);
      assert.equal(held('c41'), false);
    });
    void it('case 42: IPv6-only and dual stack through ptp', async () => {
      const v6 = rt('c42a', 'c42a');
      const res6 = await w.cni(0).add(ptpOnly('1.0.0', { assignIPv4: false, assignIPv6: true }), v6);
      assert.match((res6.ips as Ip[])[0]?.address ?? '', /^fd00:100::[0-9a-f]+\/120$/);
      const ds = rt('c42b', 'c42b');
      const resDs = await w.cni(0).add(ptpOnly('1.0.0', { assignIPv6: true }), ds);
      const ips = resDs.ips as Ip[];
      assert.equal(ips.length, 2);
      assert.notEqual(ips[0]?.gateway, ips[1]?.gateway);
      await w.cni(0).del(ptpOnly('1.0.0', { assignIPv4: false, assignIPv6: true }), v6);
      await w.cni(0).del(ptpOnly('1.0.0', { assignIPv6: true }), ds);
    });
    void it('case 43: CHECK through ptp right after ADD: IPAM CHECK gets ptp stdin with prevResult and succeeds', async () => {
      const r = rt('c43', 'c43');
      const res = await w.cni(0).add(ptpOnly(), r);
      await w.cni(0).check(ptpOnly(), r);
      const line =
        ipamLog().find((l) => l.includes('"containerID":"c43"') && l.includes('"msg":"checked"')) ?? '{}';
      const checked = JSON.parse(line) as { outcome?: string; prevResultIPs?: string[] };
      assert.equal(checked.outcome, 'ok');
      assert.deepEqual(checked.prevResultIPs, [firstAddress(res)]);
      await w.cni(0).del(ptpOnly(), r);
    });
  });
