/**
 * A small libcni for tests (CNI SPEC §3, and what libcni caches): runs a conflist through
 * real plugin binaries the way containerd/CRI-O do — every CNI_* variable exported
 * (empty ones too), name/cniVersion/runtimeConfig (filtered by each plugin's capabilities)/
 * prevResult injected, the final ADD result cached per (network, containerID, ifname), DEL in
 * reverse order with the cached result as prevResult (≥ 0.4.0), CHECK with it, GC that DELs
 * stale cached attachments then sends GC with both valid-attachments keys (libcni ≥ 1.2.3).
 * Plugins can run inside a network namespace (`netns` option: a "node").
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface NetworkList {
  readonly cniVersion: string;
  readonly name: string;
  readonly plugins: readonly Record<string, unknown>[];
}

export interface RuntimeConf {
  readonly containerID: string;
  readonly netns: string;
  readonly ifname: string;
  readonly args?: readonly (readonly [string, string])[];
  readonly capabilityArgs?: Readonly<Record<string, unknown>>;
}

export interface LibcniOptions {
  /** Directories searched for plugin binaries, in order (CNI_PATH). */
  readonly cniPath: readonly string[];
  /** Result cache directory (libcni: /var/lib/cni). */
  readonly cacheDir: string;
  /** Run plugins inside this network namespace (via `ip netns exec`). */
  readonly netns?: string;
}

/** A plugin's error reply (or a failure to produce one). */
export class PluginError extends Error {
  override readonly name = 'PluginError';
  readonly plugin: string;
  readonly command: string;
  readonly code: number;
  readonly details: string;
  readonly stderr: string;
  constructor(plugin: string, command: string, code: number, details: string, stderr: string) {
    super(`${plugin} ${command}: code ${code}: ${details}`);
    this.plugin = plugin;
    this.command = command;
    this.code = code;
    this.details = details;
    this.stderr = stderr;
  }
}

export interface ExecResult {
  readonly status: number;
  readonly stdout: string;
  readonly stderr: string;
}

export class Libcni {
  readonly options: LibcniOptions;
  constructor(options: LibcniOptions) {
    this.options = options;
  }

  /** Runs one plugin binary with the full CNI environment. */
  exec(type: string, command: string, rt: Partial<RuntimeConf>, stdin: string): Promise<ExecResult> {
    const bin = this.options.cniPath.map((d) => join(d, type)).find((p) => existsSync(p));
    if (!bin)
      return Promise.reject(new Error(`plugin ${type} not found in ${this.options.cniPath.join(':')}`));
    const env = {
      ...process.env,
      CNI_COMMAND: command,
      CNI_CONTAINERID: rt.containerID ?? '',
      CNI_NETNS: rt.netns ?? '',
      CNI_IFNAME: rt.ifname ?? '',
      CNI_ARGS: (rt.args ?? []).map(([k, v]) => `${k}=${v}`).join(';'),
      CNI_PATH: this.options.cniPath.join(':'),
    };
    const [cmd, args] = this.options.netns ? ['ip', ['netns', 'exec', this.options.netns, bin]] : [bin, []];
    return new Promise((resolve, reject) => {
      const child = spawn(cmd, args, { env, stdio: ['pipe', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      child.on('error', reject);
      child.on('close', (status) => resolve({ status: status ?? -1, stdout, stderr }));
      child.stdin.end(stdin);
    });
  }

  private async invoke(
    plugin: Record<string, unknown>,
    list: NetworkList,
    command: string,
    rt: Partial<RuntimeConf>,
    extra: Record<string, unknown>,
  ): Promise<Record<string, unknown> | undefined> {
    const type = String(plugin.type);
    const conf: Record<string, unknown> = {
      ...plugin,
      name: list.name,
      cniVersion: list.cniVersion,
      ...extra,
    };
    const rc = runtimeConfigFor(plugin, rt.capabilityArgs ?? {});
    if (Object.keys(rc).length > 0) conf.runtimeConfig = rc;
    const r = await this.exec(type, command, rt, JSON.stringify(conf));
    if (r.status !== 0) {
      let err: { code?: number; msg?: string; details?: string } = {};
      try {
        err = JSON.parse(r.stdout) as typeof err;
      } catch {
        err = { code: 0, details: `netplugin failed: ${JSON.stringify(r.stderr)}` };
      }
      throw new PluginError(type, command, err.code ?? 0, `${err.msg ?? ''}: ${err.details ?? ''}`, r.stderr);
    }
    return r.stdout.trim() === '' ? undefined : (JSON.parse(r.stdout) as Record<string, unknown>);
  }

  private cachePath(list: NetworkList, rt: Partial<RuntimeConf>): string {
    return join(this.options.cacheDir, 'results', `${list.name}-${rt.containerID}-${rt.ifname}`);
  }

  /** ADD through every plugin in order; caches and returns the final result. */
  async add(list: NetworkList, rt: RuntimeConf): Promise<Record<string, unknown>> {
    let prev: Record<string, unknown> | undefined;
    for (const p of list.plugins)
      prev = await this.invoke(p, list, 'ADD', rt, prev ? { prevResult: prev } : {});
    if (!prev) throw new Error('no result');
    mkdirSync(join(this.options.cacheDir, 'results'), { recursive: true });
    const entry = {
      kind: 'cniCacheV1',
      containerId: rt.containerID,
      ifName: rt.ifname,
      networkName: list.name,
      netns: rt.netns,
      config: list,
      cniArgs: rt.args ?? [],
      capabilityArgs: rt.capabilityArgs ?? {},
      result: prev,
    };
    writeFileSync(this.cachePath(list, rt), JSON.stringify(entry));
    return prev;
  }

  /** The cached final result, if any. */
  cached(list: NetworkList, rt: Partial<RuntimeConf>): Record<string, unknown> | undefined {
    const p = this.cachePath(list, rt);
    return existsSync(p)
      ? (JSON.parse(readFileSync(p, 'utf8')) as { result: Record<string, unknown> }).result
      : undefined;
  }

  /** DEL in reverse order with the cached result as prevResult (≥ 0.4.0); drops the cache. */
  async del(list: NetworkList, rt: RuntimeConf): Promise<void> {
    const prev = list.cniVersion >= '0.4.0' ? this.cached(list, rt) : undefined;
    for (const p of [...list.plugins].reverse())
      await this.invoke(p, list, 'DEL', rt, prev ? { prevResult: prev } : {});
    rmSync(this.cachePath(list, rt), { force: true });
  }

  /** CHECK every plugin with the cached result. */
  async check(list: NetworkList, rt: RuntimeConf): Promise<void> {
    const prev = this.cached(list, rt);
    if (!prev) throw new Error('no cached result to CHECK');
    for (const p of list.plugins) await this.invoke(p, list, 'CHECK', rt, { prevResult: prev });
  }

  /** GCNetworkList: DEL stale cached attachments, then (≥ 1.1.0) GC to every plugin. */
  async gc(
    list: NetworkList,
    valid: readonly { containerID: string; ifname: string }[] | undefined,
  ): Promise<void> {
    const dir = join(this.options.cacheDir, 'results');
    for (const f of existsSync(dir) ? readdirSync(dir) : []) {
      const e = JSON.parse(readFileSync(join(dir, f), 'utf8')) as {
        containerId: string;
        ifName: string;
        networkName: string;
        netns: string;
      };
      if (e.networkName !== list.name) continue;
      if (valid?.some((v) => v.containerID === e.containerId && v.ifname === e.ifName)) continue;
      await this.del(list, { containerID: e.containerId, ifname: e.ifName, netns: e.netns });
    }
    if (list.cniVersion !== '1.1.0') return;
    const key =
      valid === undefined ? {} : { 'cni.dev/valid-attachments': valid, 'cni.dev/attachments': valid };
    for (const p of list.plugins) await this.invoke(p, list, 'GC', {}, key);
  }

  async status(list: NetworkList): Promise<void> {
    for (const p of list.plugins) await this.invoke(p, list, 'STATUS', {}, {});
  }
}

/** libcni injectRuntimeConfig: capability args the plugin entry declares (`capabilities`). */
function runtimeConfigFor(
  plugin: Record<string, unknown>,
  caps: Readonly<Record<string, unknown>>,
): Record<string, unknown> {
  const declared = (plugin.capabilities ?? {}) as Record<string, boolean>;
  return Object.fromEntries(Object.entries(caps).filter(([k]) => declared[k] === true));
}
