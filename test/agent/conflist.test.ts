/**
 * The conflist the agent installs (block-controller/agent/install/conflist.ts) asks for the
 * address families of the configured pools — IPv4 only, IPv6 only or both — and the plugin's own
 * netconf parser (core/cni/netconf.ts) reads them back as those families. The plugin settings it
 * is given (--plugin-log-file …) are read back by the plugin as given (the flags refused out of
 * range at the agent's start: test/agent/options.test.ts).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { conflistFor } from '../../block-controller/agent/install/conflist.ts';
import type { ConflistOptions } from '../../block-controller/agent/install/conflist.ts';
import { parseOptions } from '../../block-controller/agent/options.ts';
import { parseNetConf } from 'blockipam/core/cni';

const KUBECONFIG = '/etc/cni/net.d/blockipam-kubeconfig';

/** The conflist's first plugin (ptp with blockipam as IPAM): its `ipam`, and as the plugin reads it. */
function firstPlugin(options: Omit<ConflistOptions, 'kubeconfig'>) {
  const list = conflistFor({ kubeconfig: KUBECONFIG, ...options });
  const [ptp] = list.plugins as Record<string, unknown>[];
  assert.ok(ptp);
  const netconf = parseNetConf(JSON.stringify({ cniVersion: list.cniVersion, name: list.name, ...ptp }));
  return { ipam: ptp.ipam, netconf };
}

describe('the conflist’s address families', () => {
  for (const [options, families] of [
    [{}, [4]], // IPv4 only by default
    [{ assignIPv4: true, assignIPv6: false }, [4]],
    [{ assignIPv4: false, assignIPv6: true }, [6]],
    [{ assignIPv6: true }, [4, 6]],
  ] as const)
    test(`${JSON.stringify(options)}: the plugin reads IPv${families.join(' and IPv')}`, () =>
      assert.deepEqual(firstPlugin(options).netconf.families, families));

  test('only what differs from the plugin’s defaults is written', () => {
    assert.deepEqual(firstPlugin({}).ipam, { type: 'blockipam', kubeconfig: KUBECONFIG });
    assert.deepEqual(firstPlugin({ assignIPv4: false, assignIPv6: true }).ipam, {
      type: 'blockipam',
      kubeconfig: KUBECONFIG,
      assignIPv4: false,
      assignIPv6: true,
    });
  });

  test('the agent’s IPAM socket, when it serves one, as ipam.agentSocket; the plugin forwards to it', () => {
    const { ipam, netconf } = firstPlugin({ agentSocket: '/var/run/blockipam/agent/ipam.sock' });
    assert.deepEqual(ipam, {
      type: 'blockipam',
      kubeconfig: KUBECONFIG,
      agentSocket: '/var/run/blockipam/agent/ipam.sock',
    });
    assert.equal(netconf.agentSocket, '/var/run/blockipam/agent/ipam.sock');
    assert.equal(netconf.mode, 'agent');
  });

  test('host-local’s store while adopting, as ipam.hostLocalStore; the plugin reads it', () => {
    const store = '/run/cni-ipam-state/kindnet';
    const { ipam, netconf } = firstPlugin({ hostLocalStore: store });
    assert.deepEqual(ipam, { type: 'blockipam', kubeconfig: KUBECONFIG, hostLocalStore: store });
    assert.equal(netconf.hostLocalStore, store);
    assert.equal(firstPlugin({}).netconf.hostLocalStore, undefined);
  });

  test('no family at all is refused', () => {
    assert.throws(
      () => conflistFor({ kubeconfig: KUBECONFIG, assignIPv4: false }),
      /assignIPv4 and assignIPv6 are both false/,
    );
  });
});

describe('the plugin’s settings in the conflist', () => {
  for (const [args, read] of [
    [
      [
        ...['--plugin-log-level', 'debug', '--plugin-log-file', '/var/log/blockipam/plugin.log'],
        ...['--plugin-timeout-ms', '5000', '--plugin-lock-timeout-ms', '120000'],
      ],
      ['debug', '/var/log/blockipam/plugin.log', 5000, 120_000],
    ],
    // without them the plugin keeps its own defaults
    [[], ['info', undefined, 30_000, 60_000]],
  ] as const)
    test(`the agent’s ${args.length > 0 ? '--plugin-* flags reach' : 'defaults leave'} the plugin’s netconf`, async () => {
      const options = await parseOptions(['--node-name', 'node-1', ...args], {});
      const { netconf } = firstPlugin({ plugin: options.plugin });
      assert.deepEqual([netconf.logLevel, netconf.logFile, netconf.timeoutMs, netconf.lockTimeoutMs], read);
    });
});
