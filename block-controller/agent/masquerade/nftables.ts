/**
 * The masquerade rule in nftables (docs/design-agent.md §Masquerade): the script that replaces
 * the agent's own table in one transaction (pure), and the `nft` command that loads and lists
 * it. The agent owns exactly one table, `inet blockipam` ({@link NFT_TABLE}); it never reads,
 * changes or removes anything outside it, so other tables (kube-proxy's, a firewall's, portmap's
 * iptables-nft chains) are never touched. Requires nftables ≥ 0.9.1 and Linux ≥ 5.2 (NAT chains
 * in the `inet` family; Debian 12 ships nftables 1.0.6 and Linux 6.1).
 */
import type { IPFamily } from 'blockipam/core';
import { runCommand, type CommandRun } from '../command.ts';
import { NftCommandError } from './nft-command-error.ts';
import type { MasqueradePlan } from './plan.ts';

/** The agent's nftables table (family `inet`: one table for IPv4 and IPv6). */
const NFT_TABLE = 'blockipam';

const FAMILY: Readonly<Record<IPFamily, { readonly match: string; readonly type: string }>> = {
  4: { match: 'ip', type: 'ipv4_addr' },
  6: { match: 'ip6', type: 'ipv6_addr' },
};

/**
 * The nft script that makes table `inet <table>` hold exactly `plan`'s rule, atomically: it
 * creates the table when absent (so that the delete cannot fail), deletes it and defines it anew,
 * all in one transaction (`nft -f`: every packet sees the old rule set or the new one, never
 * none). Per family that has a pool: the sets `pods4` / `exempt4` (`pods6` / `exempt6`) and the
 * rule `ip saddr @pods4 ip daddr != @exempt4 masquerade` in a NAT chain at the `postrouting`
 * hook, priority `srcnat` (100, where iptables' nat POSTROUTING sits). NAT chains see the first
 * packet of each connection only; conntrack rewrites the rest. Pure.
 */
export function renderRuleset(plan: MasqueradePlan, table: string = NFT_TABLE): string {
  const families = ([4, 6] as const).filter((f) => plan[f].sources.length > 0);
  const lines = [`table inet ${table} {}`, `delete table inet ${table}`, `table inet ${table} {`];
  for (const f of families) {
    lines.push(...set(`pods${f}`, FAMILY[f].type, plan[f].sources));
    lines.push(...set(`exempt${f}`, FAMILY[f].type, plan[f].exempt));
  }
  lines.push('  chain postrouting {', '    type nat hook postrouting priority srcnat; policy accept;');
  for (const f of families) {
    const m = FAMILY[f].match;
    lines.push(`    ${m} saddr @pods${f} ${m} daddr != @exempt${f} masquerade`);
  }
  lines.push('  }', '}');
  return lines.join('\n') + '\n';
}

/** The nft script that removes table `inet <table>` and succeeds when it is absent. Pure. */
export function removalScript(table: string = NFT_TABLE): string {
  return `table inet ${table} {}\ndelete table inet ${table}\n`;
}

function set(name: string, type: string, cidrs: readonly string[]): string[] {
  const elements = cidrs.length > 0 ? [`    elements = { ${cidrs.join(', ')} }`] : [];
  return [`  set ${name} {`, `    type ${type}`, '    flags interval', ...elements, '  }'];
}

/** The kernel side, as the masquerade loop needs it ({@link NftTable} implements it). */
export interface MasqueradeTable {
  /** The table as `nft list table` prints it; undefined when it does not exist. */
  list(): Promise<string | undefined>;
  /** Loads an nft script in one transaction (all of it or nothing). */
  load(script: string): Promise<void>;
}

export interface NftTableOptions {
  /** The table, default {@link NFT_TABLE}. */
  readonly table?: string;
  /**
   * The command and leading arguments, default `["nft"]` (the network namespace the agent runs
   * in: the node's, with hostNetwork). Tests point it into a namespace they created:
   * `["ip", "netns", "exec", "<netns>", "nft"]`.
   */
  readonly command?: readonly string[];
  /** Per run, ms; the run is SIGKILLed after it. Default 10 000 (a hung `nft` must not stall the agent). */
  readonly timeoutMs?: number;
}

/** {@link MasqueradeTable} over the `nft` command. */
export class NftTable implements MasqueradeTable {
  readonly table: string;
  readonly #command: readonly string[];
  readonly #timeoutMs: number;

  constructor(options: NftTableOptions = {}) {
    this.table = options.table ?? NFT_TABLE;
    if (!/^[a-z][a-z0-9_-]{0,31}$/.test(this.table))
      throw new RangeError(
        `nft table: ${JSON.stringify(this.table)} is not a lower-case name of 1-32 characters`,
      );
    this.#command = options.command ?? ['nft'];
    this.#timeoutMs = options.timeoutMs ?? 10_000;
  }

  /** @throws {NftCommandError} when `nft` fails other than for an absent table */
  async list(): Promise<string | undefined> {
    const argv = [...this.#command, 'list', 'table', 'inet', this.table];
    const run = await this.#run(argv);
    if (run.status === 0) return run.stdout;
    if (/No such file or directory/.test(run.stderr)) return undefined;
    throw new NftCommandError(`${argv.join(' ')}: exit ${run.status}: ${run.stderr.trim()}`, argv);
  }

  /** @throws {NftCommandError} when `nft` refuses the script (nothing of it was applied) or cannot run */
  async load(script: string): Promise<void> {
    const argv = [...this.#command, '-f', '-'];
    const run = await this.#run(argv, script);
    if (run.status !== 0)
      throw new NftCommandError(`${argv.join(' ')}: exit ${run.status}: ${run.stderr.trim()}`, argv);
  }

  #run(argv: readonly string[], stdin = ''): Promise<CommandRun> {
    return runCommand(argv, {
      stdin,
      timeoutMs: this.#timeoutMs,
      fails: NftCommandError,
    });
  }
}
