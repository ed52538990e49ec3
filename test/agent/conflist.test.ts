/**
 * The conflist the agent installs (block-controller/agent/install/conflist.ts) asks for the
 * address families of the configured pools — IPv4 only, IPv6 only or both — and the plugin's own
 * netconf parser (core/cni/netconf.ts) reads them back as those families; the agent's
 * command line refuses no family at all, naming the flags. The plugin settings it is given
 * (--plugin-log-file …) are read back by the plugin as given; out of range, they are refused at
 * the agent's start.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { conflistFor } from '../../block-controller/agent/install/conflist.ts';
import type { ConflistOptions } from '../../block-controller/agent/install/conflist.ts';
import { parseOptions } from '../../block-controller/agent/options.ts';
import { parseNetConf } from 'blockipam/core/cni';

const KUBECONFIG = '/etc/cni/net.d/blockipam-kubeconfig';

/** The families the plugin assigns for the conflist's first plugin (ptp with blockipam as IPAM). */
function families(options: Omit<ConflistOptions, 'kubeconfig'>): readonly number[] {
  const list = conflistFor({ kubeconfig: KUBECONFIG, ...options }) as {
    cniVersion: string;
    name: string;
    plugins: Record<string, unknown>[];
  };
  const [ptp] = list.plugins;
  assert.ok(ptp);
  return parseNetConf(JSON.stringify({ cniVersion: list.cniVersion, name: list.name, ...ptp })).families;
}

describe('the conflist’s address families', () => {
  test('IPv4 only by default, IPv6 only, dual-stack — as the plugin reads them', () => {
    assert.deepEqual(families({}), [4]);
    assert.deepEqual(families({ assignIPv4: true, assignIPv6: false }), [4]);
    assert.deepEqual(families({ assignIPv4: false, assignIPv6: true }), [6]);
    assert.deepEqual(families({ assignIPv6: true }), [4, 6]);
  });

  test('only what differs from the plugin’s defaults is written', () => {
    const ipam = (options: Omit<ConflistOptions, 'kubeconfig'>): unknown =>
      (conflistFor({ kubeconfig: KUBECONFIG, ...options }).plugins as { ipam: unknown }[])[0]?.ipam;
    assert.deepEqual(ipam({}), { type: 'blockipam', kubeconfig: KUBECONFIG });
    assert.deepEqual(ipam({ assignIPv4: false, assignIPv6: true }), {
      type: 'blockipam',
      kubeconfig: KUBECONFIG,
      assignIPv4: false,
      assignIPv6: true,
    });
  });

  test('the agent’s IPAM socket, when it serves one, as ipam.agentSocket', () => {
    const ipam = (options: Omit<ConflistOptions, 'kubeconfig'>): unknown =>
      (conflistFor({ kubeconfig: KUBECONFIG, ...options }).plugins as { ipam: unknown }[])[0]?.ipam;
    assert.deepEqual(ipam({ agentSocket: '/var/run/blockipam/agent/ipam.sock' }), {
      type: 'blockipam',
      kubeconfig: KUBECONFIG,
      agentSocket: '/var/run/blockipam/agent/ipam.sock',
    });
    // the plugin reads it back and forwards to the agent
    const list = conflistFor({ kubeconfig: KUBECONFIG, agentSocket: '/var/run/blockipam/agent/ipam.sock' });
    const [ptp] = list.plugins as Record<string, unknown>[];
    const netconf = parseNetConf(JSON.stringify({ cniVersion: list.cniVersion, name: list.name, ...ptp }));
    assert.equal(netconf.agentSocket, '/var/run/blockipam/agent/ipam.sock');
    assert.equal(netconf.mode, 'agent');
  });

  test('no family at all is refused', () => {
    assert.throws(
      () => conflistFor({ kubeconfig: KUBECONFIG, assignIPv4: false }),
      /assignIPv4 and assignIPv6 are both false/,
    );
  });
});

describe('the plugin’s settings in the conflist', () => {
  const netconf = (options: Omit<ConflistOptions, 'kubeconfig'>) => {
    const list = conflistFor({ kubeconfig: KUBECONFIG, ...options }) as {
      cniVersion: string;
      name: string;
      plugins: Record<string, unknown>[];
    };
    return parseNetConf(JSON.stringify({ cniVersion: list.cniVersion, name: list.name, ...list.plugins[0] }));
  };

  test('the agent’s --plugin-* flags reach the plugin as its netconf (the plugin reads them back)', async () => {
    const options = await parseOptions(
      [
        ...['--node-name', 'node-1', '--plugin-log-level', 'debug'],
        ...['--plugin-log-file', '/var/log/blockipam/plugin.log'],
        ...['--plugin-timeout-ms', '5000', '--plugin-lock-timeout-ms', '120000'],
      ],
      {},
    );
    const read = netconf({ plugin: options.plugin });
    assert.deepEqual(
      [read.logLevel, read.logFile, read.timeoutMs, read.lockTimeoutMs],
      ['debug', '/var/log/blockipam/plugin.log', 5000, 120_000],
    );
  });

  test('the plugin’s kubeconfig goes beside the conflist unless --plugin-kubeconfig names it', async () => {
    const parsed = async (...args: string[]) =>
      (await parseOptions(['--node-name', 'node-1', ...args], {})).pluginKubeconfig;
    assert.equal(await parsed(), '/etc/cni/net.d/blockipam-kubeconfig');
    assert.equal(await parsed('--cni-conf-dir', '/tmp/x/conf'), '/tmp/x/conf/blockipam-kubeconfig');
    assert.equal(await parsed('--cni-conf-dir', '/tmp/x/conf', '--plugin-kubeconfig', '/k/kc'), '/k/kc');
  });

  test('without them the plugin keeps its own defaults and nothing is written', async () => {
    const options = await parseOptions(['--node-name', 'node-1'], {});
    assert.deepEqual(options.plugin, {});
    const read = netconf({ plugin: options.plugin });
    assert.deepEqual(
      [read.logLevel, read.logFile, read.timeoutMs, read.lockTimeoutMs],
      ['info', undefined, 30_000, 60_000],
    );
  });

  for (const [flag, value, message] of [
    ['--plugin-log-file', 'plugin.log', /--plugin-log-file must be an absolute path, not "plugin.log"/],
    ['--plugin-timeout-ms', '99', /--plugin-timeout-ms must be an integer 100-600000, not 99/],
    ['--plugin-timeout-ms', 'abc', /--plugin-timeout-ms must be an integer 100-600000, not a number/],
    ['--plugin-lock-timeout-ms', '-1', /--plugin-lock-timeout-ms must be an integer 0-600000, not -1/],
    ['--plugin-lock-timeout-ms', '600001', /--plugin-lock-timeout-ms must be an integer 0-600000/],
    ['--plugin-lock-timeout-ms', '1.5', /--plugin-lock-timeout-ms must be an integer 0-600000, not 1.5/],
    ['--plugin-log-level', 'trace', /plugin-log-level.*trace|Invalid values/s],
    // what the conflist carries: the plugin would refuse these names at every call
    ['--cni-version', '9.9.9', /cni-version.*9\.9\.9|Invalid values/s],
    ['--network-name', 'bad name', /--network-name "bad name": must match/],
    ['--network-name', `n${'a'.repeat(256)}`, /--network-name .*257 characters, at most 256/],
    ['--conflist-name', '../../x.conflist', /--conflist-name must be a file name ending in \.conflist/],
    ['--conflist-name', 'blockipam.conf', /--conflist-name must be a file name ending in \.conflist/],
    // refused by the TokenRequest API only after the plugin was installed
    ['--token-expiration-seconds', '1', /--token-expiration-seconds must be an integer 600-86400, not 1/],
    ['--token-refresh-seconds', '99999', /--token-refresh-seconds must be a number above 0 and below/],
    ['--token-refresh-seconds', '-1', /--token-refresh-seconds must be a number above 0/],
    ['--api-server', 'not a url', /--api-server is not an https:\/\/ or http:\/\/ URL: "not a url"/],
    ['--plugin-api-server', 'ftp://x', /--plugin-api-server is not an https:\/\/ or http:\/\/ URL/],
  ] as const)
    test(`${flag} ${value} is refused at start-up, naming it`, async () =>
      assert.rejects(parseOptions(['--node-name', 'node-1', flag, value], {}), message));
});

describe('the agent’s family flags', () => {
  const base = ['--node-name', 'node-1'];
  test('--assign-ipv4=false --assign-ipv6 is IPv6-only; the default is IPv4 only', async () => {
    const v6 = await parseOptions([...base, '--assign-ipv4=false', '--assign-ipv6'], {});
    assert.deepEqual([v6.assignIpv4, v6.assignIpv6], [false, true]);
    const v4 = await parseOptions(base, {});
    assert.deepEqual([v4.assignIpv4, v4.assignIpv6], [true, false]);
  });

  test('--assign-ipv4=false alone is a usage error naming the flags', async () => {
    await assert.rejects(
      parseOptions([...base, '--assign-ipv4=false'], {}),
      /--assign-ipv4=false needs --assign-ipv6/,
    );
  });

  test('--metrics-port outside 0-65535 or not an integer is refused naming the value', async () => {
    for (const port of ['99999', '-1', '1.5'])
      await assert.rejects(
        parseOptions([...base, '--metrics-port', port], {}),
        new RegExp(`--metrics-port must be a port 0-65535 .*not ${port.replace('.', '\\.')}`),
      );
  });
});
