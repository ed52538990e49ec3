/**
 * Shared setup of the conformance files (docs/design-plugin.md §Tests): pools on the real API
 * server, a netconf builder, CNI env builder, and the error-envelope assertion (case 11 holds
 * for every error: exactly one JSON object on stdout, exit ≠ 0). {@link startSuite} runs a suite
 * in one of {@link suiteModes}: `standalone` (the plugin's direct path, `ipam.mode: standalone`)
 * or `agent` (a real node agent serving the node's IPAM on its socket, the netconf naming it;
 * the calls run through the native forwarder as the agent installs it: {@link installForwarded}).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fixture, type Fixture } from './cluster.ts';
import { ensureForwarder, ensurePlugin, pluginDir, runPlugin, type PluginRun } from './plugin-exe.ts';
import { installExecutables, PLUGIN_NAME } from '../../../block-controller/agent/install/installer.ts';
import { kubectl } from '../../helpers/control-plane.ts';
import { applyNode, eventually, scrape, startAgent, type AgentProcess } from '../../agent/agent-process.ts';

export const NODE = 'conf-node';
export const NET = 'confnet';

/** Where a suite's calls are served: the plugin's direct path, or a node agent's socket. */
export type SuiteMode = 'standalone' | 'agent';
/** Every conformance file runs once per mode. */
export const suiteModes: readonly SuiteMode[] = ['standalone', 'agent'];

export interface Suite {
  /** Undefined: the netconf names no mode (its default: standalone without `agentSocket`). */
  readonly mode?: SuiteMode;
  /**
   * The `ipam` fields that pick the mode, for a netconf built elsewhere (the ptp world's):
   * `mode: standalone`, or the agent's socket and {@link NODE} (the node it serves); {} without a mode.
   */
  readonly modeIpam: Readonly<Record<string, unknown>>;
  readonly fx: Fixture;
  readonly tmp: string;
  /** The node agent serving the suite (`agent` mode only). */
  readonly agent?: AgentProcess;
  /**
   * The CNI bin directory whose `blockipam` the suite runs: in `agent` mode the forwarder with
   * `blockipam-direct` beside it ({@link installForwarded}), else build/plugin.
   */
  readonly pluginDir: string;
  /** A netconf for `version` (undefined = key absent) with ipam/top-level fields merged in. */
  conf(version: string | undefined, ipam?: Record<string, unknown>, top?: Record<string, unknown>): string;
  run(env: Record<string, string | undefined>, stdin: string): Promise<PluginRun>;
  teardown(): Promise<void>;
}

/**
 * A suite in `mode`: {@link setupSuite}, and for `agent` a real node agent for {@link NODE}
 * (its Node object applied) serving on a socket in the suite's directory, synced (/readyz 200)
 * before this resolves; every netconf of the suite names that socket. Stopped by `teardown`.
 */
export async function startSuite(mode: SuiteMode): Promise<Suite> {
  const s = setupSuite(mode);
  if (mode === 'standalone') return s;
  const bin = await installForwarded(join(s.tmp, 'cni-bin'));
  applyNode(NODE);
  const agent: AgentProcess = startAgent(NODE, ['--ipam-socket', agentSocketOf(s.tmp)]);
  try {
    await agent.waitFor((l) => l.message === 'IPAM server listening', 'IPAM server listening', 60_000);
    // synced: before, it answers every call "not ready" (CNI 11)
    await eventually(
      'the agent ready',
      async () => ((await scrape(agent, '/readyz')).status === 200 ? true : undefined),
      60_000,
    );
  } catch (e) {
    await agent.kill();
    await s.teardown();
    throw new Error(`${(e as Error).message}; agent log: ${JSON.stringify(agent.lines.slice(-8))}`, {
      cause: e,
    });
  }
  return {
    ...s,
    agent,
    pluginDir: bin,
    run: (env, stdin) => runPlugin(env, stdin, join(bin, PLUGIN_NAME)),
    async teardown() {
      await agent.kill();
      kubectl(['delete', 'node', NODE, '--ignore-not-found']);
      await s.teardown();
    },
  };
}

const agentSocketOf = (tmp: string): string => join(tmp, 'agent', 'ipam.sock');

/**
 * Installs the plugin into `dir` as the node agent does with the image's forwarder (its
 * installer's {@link installExecutables}): the TypeScript executable ({@link ensurePlugin}) as
 * `blockipam-direct`, the native forwarder ({@link ensureForwarder}) as `blockipam`. Returns `dir`.
 */
export async function installForwarded(dir: string): Promise<string> {
  await installExecutables({
    cniBinDir: dir,
    pluginBinary: ensurePlugin(),
    forwarderBinary: ensureForwarder(),
  });
  return dir;
}

/**
 * Creates the pools every conformance file uses and builds the executable; `mode` goes into every
 * netconf (`agent`: the socket {@link startSuite} serves on). Without one the netconf names no
 * mode: a test that sets `agentSocket` itself gets the netconf's default, agent mode.
 */
export function setupSuite(mode?: SuiteMode): Suite {
  ensurePlugin();
  const fx = fixture();
  const tmp = mkdtempSync(join(tmpdir(), 'bipam-conf-'));
  fx.pool('conf-v4', '10.100.0.0/16', 24);
  fx.pool('conf-v6', 'fd00:100::/112', 120);
  fx.pool('conf-tiny', '10.101.0.0/30', 30, { assignmentMode: 'Manual' });
  const modeIpam =
    mode === 'agent'
      ? { agentSocket: agentSocketOf(tmp), nodeName: NODE }
      : mode === 'standalone'
        ? { mode: 'standalone' }
        : {};
  return {
    ...(mode ? { mode } : {}),
    modeIpam,
    fx,
    tmp,
    pluginDir,
    conf(version, ipam = {}, top = {}) {
      return JSON.stringify({
        ...(version === undefined ? {} : { cniVersion: version }),
        name: NET,
        type: 'ptp',
        ipam: {
          type: 'blockipam',
          kubeconfig: fx.kubeconfig,
          nodeName: NODE,
          logFile: join(tmp, 'blockipam.log'),
          cacheDir: join(tmp, 'cache'),
          ipv4Pools: ['conf-v4'],
          ipv6Pools: ['conf-v6'],
          ...modeIpam,
          ...ipam,
        },
        ...top,
      });
    },
    run: runPlugin,
    teardown() {
      fx.cleanup();
      rmSync(tmp, { recursive: true, force: true });
      return Promise.resolve();
    },
  };
}

/** The CNI environment of an attachment command. */
export function env(
  command: string,
  containerID = 'ctr1',
  extra: Record<string, string | undefined> = {},
): Record<string, string | undefined> {
  return {
    CNI_COMMAND: command,
    CNI_CONTAINERID: containerID,
    CNI_NETNS: '/var/run/netns/none',
    CNI_IFNAME: 'eth0',
    CNI_PATH: '/opt/cni/bin',
    ...extra,
  };
}

/** GC / STATUS environment as libcni sets it (attachment variables present but empty). */
export function envNoAttachment(command: string): Record<string, string> {
  return {
    CNI_COMMAND: command,
    CNI_CONTAINERID: '',
    CNI_NETNS: '',
    CNI_IFNAME: '',
    CNI_ARGS: '',
    CNI_PATH: '/opt/cni/bin',
  };
}

/** Asserts case 11's envelope and the code; returns the error document. */
export function assertCniError(r: PluginRun, code: number): Record<string, unknown> {
  assert.notEqual(r.status, 0, 'exit status');
  assert.equal(r.stdout.trim().split('\n').length, 1, `one line on stdout: ${r.stdout}`);
  assert.ok(r.json, `stdout is JSON: ${r.stdout}`);
  assert.equal(r.json.code, code, r.stdout);
  assert.equal(typeof r.json.msg, 'string');
  return r.json;
}

/** Asserts success with nothing on stdout (DEL, CHECK, GC, STATUS). */
export function assertSilentSuccess(r: PluginRun): void {
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.equal(r.stdout, '');
}

/** Asserts an ADD success; returns the result. */
export function assertAdded(r: PluginRun): Record<string, unknown> {
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.ok(r.json, `one JSON document: ${r.stdout}`);
  assert.equal(r.stdout.trim().split('\n').length, 1);
  return r.json;
}

export function handle(containerID: string, ifname = 'eth0'): string {
  return `${NET}.${containerID}.${ifname}`;
}

export function firstAddress(result: Record<string, unknown>): string {
  return ((result.ips as { address: string }[])[0]?.address ?? '').split('/')[0] as string;
}
