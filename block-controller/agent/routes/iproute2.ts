/**
 * The kernel route table through iproute2 (docs/design-agent.md "Routes", mechanism): reads
 * with `ip -json route show table main proto <id>` (one run per family), writes with one
 * `ip -force -batch -` run per pass (all changes on stdin, one line each; `-force` keeps going
 * past a failed line and names it on stderr as "Command failed -:<line>"). Every line carries
 * `proto <id>`, and deletes match on it, so no route of another protocol is ever removed; the
 * other protocols' unicast routes are read ({@link IpRouteTable.others}) only so that one equal
 * to ours is taken over by a `replace`. Requires iproute2 ≥ 4.17 (JSON route output; Debian 12
 * ships 6.1).
 */
import { bitsOf, formatCidr, formatIP, parseCidr, parseIP } from 'blockipam/core';
import type { IPFamily } from 'blockipam/core';
import { runCommand, type CommandRun } from '../command.ts';
import { RouteCommandError } from './route-command-error.ts';
import type { InstalledRoute, RouteChange, RouteTable } from './types.ts';
import { ROUTE_PROTOCOL } from './types.ts';

export interface IpRouteTableOptions {
  /** Routing protocol id stamped on and matched against our routes. Default {@link ROUTE_PROTOCOL}. */
  readonly protocol?: number;
  /**
   * The command and leading arguments, default `["ip"]`. Tests point it into a network
   * namespace: `["ip", "-n", "<netns>"]`.
   */
  readonly command?: readonly string[];
  /** Per run, ms; the run is SIGKILLed after it. Default 10 000 (a hung `ip` must not stall the agent). */
  readonly timeoutMs?: number;
}

/** One route as `ip -json route show` prints it (the fields used). */
interface IpJsonRoute {
  dst?: string;
  protocol?: string;
  type?: string;
  gateway?: string;
  dev?: string;
  metric?: number;
}

/** {@link RouteTable} over the `ip` command. */
export class IpRouteTable implements RouteTable {
  readonly protocol: number;
  readonly #command: readonly string[];
  readonly #timeoutMs: number;

  constructor(options: IpRouteTableOptions = {}) {
    const protocol = options.protocol ?? ROUTE_PROTOCOL;
    if (!Number.isInteger(protocol) || protocol < 5 || protocol > 255)
      throw new RangeError(
        `routes protocol: ${protocol} is not an integer in 5..255 (0–4 belong to the kernel)`,
      );
    this.protocol = protocol;
    this.#command = options.command ?? ['ip'];
    this.#timeoutMs = options.timeoutMs ?? 10_000;
  }

  /** @throws {RouteCommandError} when `ip` fails or prints something other than a JSON array */
  async list(): Promise<InstalledRoute[]> {
    const [v4, v6] = await Promise.all([this.#show(4), this.#show(6)]);
    return [...v4, ...v6];
  }

  /** @throws {RouteCommandError} when `ip` fails or prints something other than a JSON array */
  async others(): Promise<InstalledRoute[]> {
    const [v4, v6] = await Promise.all([this.#show(4, false), this.#show(6, false)]);
    return [...v4, ...v6].filter((r) => r.type === 'unicast' && r.gateway !== undefined);
  }

  /** @throws {RouteCommandError} when `ip` cannot be run at all (a failed line is a returned entry) */
  async apply(changes: readonly RouteChange[]): Promise<{ change: RouteChange; error: string }[]> {
    if (changes.length === 0) return [];
    const lines = changes.map((c) => this.lineOf(c));
    const argv = [...this.#command, '-force', '-batch', '-'];
    const run = await this.#run(argv, lines.join('\n') + '\n');
    if (run.status === 0) return [];
    const failures = parseBatchFailures(run.stderr);
    if (failures.size === 0)
      throw new RouteCommandError(`${argv.join(' ')}: exit ${run.status}: ${run.stderr}`, argv);
    return [...failures].flatMap(([line, error]) => {
      const change = changes[line - 1];
      return change ? [{ change, error }] : [];
    });
  }

  /** The batch line of one change (exported for tests and logs). */
  lineOf(change: RouteChange): string {
    const proto = `proto ${this.protocol}`;
    const r = change.route;
    if (change.op === 'delete') {
      const metric = change.route.metric === undefined ? '' : ` metric ${change.route.metric}`;
      return `route del ${r.dst} ${proto}${metric}`;
    }
    const target =
      change.route.type === 'blackhole' ? `blackhole ${r.dst}` : `${r.dst} via ${change.route.gateway}`;
    return `route ${change.op} ${target} ${proto}`;
  }

  /** Our protocol's routes of `family` (`ours`), or every other protocol's. */
  async #show(family: IPFamily, ours = true): Promise<InstalledRoute[]> {
    const argv = [
      ...this.#command,
      '-json',
      `-${family}`,
      'route',
      'show',
      'table',
      'main',
      ...(ours ? ['proto', String(this.protocol)] : []),
    ];
    const run = await this.#run(argv);
    if (run.status !== 0)
      throw new RouteCommandError(`${argv.join(' ')}: exit ${run.status}: ${run.stderr}`, argv);
    let parsed: unknown;
    try {
      parsed = run.stdout.trim() === '' ? [] : JSON.parse(run.stdout);
    } catch (cause) {
      throw new RouteCommandError(`${argv.join(' ')}: output is not JSON`, argv, { cause });
    }
    if (!Array.isArray(parsed))
      throw new RouteCommandError(`${argv.join(' ')}: output is not a JSON array`, argv);
    const routes = parsed as IpJsonRoute[];
    const mine = String(this.protocol);
    return routes.filter((r) => ours || r.protocol !== mine).flatMap((r) => installedOf(r, family) ?? []);
  }

  #run(argv: readonly string[], stdin = ''): Promise<CommandRun> {
    return runCommand(argv, {
      stdin,
      timeoutMs: this.#timeoutMs,
      fails: RouteCommandError,
    });
  }
}

/** Normalises one JSON route: canonical dst with explicit prefix, canonical gateway. */
function installedOf(r: IpJsonRoute, family: IPFamily): InstalledRoute | undefined {
  if (r.dst === undefined) return undefined;
  const text =
    r.dst === 'default'
      ? family === 4
        ? '0.0.0.0/0'
        : '::/0'
      : r.dst.includes('/')
        ? r.dst
        : `${r.dst}/${bitsOf(family)}`;
  const cidr = parseCidr(text, { strict: false });
  if (!cidr) return undefined;
  const gw = r.gateway === undefined ? undefined : parseIP(r.gateway);
  const type =
    r.type === undefined || r.type === 'unicast' ? 'unicast' : r.type === 'blackhole' ? 'blackhole' : 'other';
  return {
    dst: formatCidr(cidr),
    family,
    type,
    ...(gw ? { gateway: formatIP(gw) } : {}),
    ...(r.dev === undefined ? {} : { dev: r.dev }),
    ...(r.metric === undefined ? {} : { metric: r.metric }),
  };
}

/**
 * Batch failures from `ip -force -batch -` stderr: each failed line prints its error (one or
 * more lines) followed by "Command failed -:<line>".
 * @returns line number (1-based) → error text
 */
export function parseBatchFailures(stderr: string): Map<number, string> {
  const out = new Map<number, string>();
  let pending: string[] = [];
  for (const line of stderr.split('\n')) {
    const m = /^Command failed -:(\d+)\s*$/.exec(line);
    if (m) {
      out.set(Number(m[1]), pending.join(' ').trim() || 'failed');
      pending = [];
    } else if (line.trim() !== '') pending.push(line.trim());
  }
  return out;
}
