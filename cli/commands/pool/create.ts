/**
 * `ipamctl pool create NAME --cidr C`: validates like the controller (core's validatePool: no
 * overlap with other pools, nor with blocks of another size) before the API server's schema
 * sees it — and again after the CREATE, so that concurrent creations cannot leave two
 * overlapping pools (docs/design-cli.md §pool create):
 *
 * 1. validatePool (refuse at once what already conflicts);
 * 2. CREATE the pool **disabled** (no allocator uses it while the check is open);
 * 3. validatePool again on a LIST taken after the CREATE: a conflict now is a pool (or a block
 *    of another size) created meanwhile → DELETE ours (uid precondition) and refuse, exit 2;
 * 4. unless `--disabled`, enable it (compare-and-swap UPDATE).
 *
 * Why this is atomic: if two overlapping creations both passed step 3, each LIST missed the
 * other's pool, so each CREATE committed after the other's LIST — yet each LIST follows its own
 * CREATE: a cycle, impossible with the API server's linearizable LISTs. Both may lose; never
 * both win. A loser starts over from step 1 after a random 50–250 ms (≤ 3 attempts), where it
 * finds the winner and is refused — or, when every contender lost, one of them wins.
 */
import {
  API_VERSION,
  BLOCK_SIZE_RANGE,
  cidrProblem,
  DEFAULT_BLOCK_SIZE,
  formatCidr,
  isAllowedBlockSize,
  isAlreadyExists,
  isDnsSubdomain,
  isNotFound,
  parseCidr,
  validatePool,
} from 'blockipam/core';
import type { Datastore, IPPool, LabelSelector } from 'blockipam/core';
import { defineCommand, integerFlag, quoted, retryOnConflict, withYes } from '../../command.ts';
import type { CommandContext, GlobalFlags } from '../../command.ts';
import { CliError, EXIT, println } from '../../io.ts';

interface CreateArgs extends GlobalFlags {
  name: string;
  cidr: string;
  blockSize?: number;
  nodeSelector?: string;
  namespaceSelector?: string;
  mode: 'Automatic' | 'Manual';
  disabled: boolean;
  podcidrBlocks?: boolean;
}

/** Parses "k=v,k2=v2" into a matchLabels selector. @throws CliError on bad syntax */
function parseSelector(text: string, flag: string): LabelSelector {
  const matchLabels: Record<string, string> = {};
  for (const part of text.split(',').filter((p) => p.trim() !== '')) {
    const m = /^\s*([A-Za-z0-9._/-]+)\s*=\s*([A-Za-z0-9._-]*)\s*$/.exec(part);
    if (!m?.[1]) throw new CliError(`${flag}: ${JSON.stringify(part)} is not key=value`);
    matchLabels[m[1]] = m[2] ?? '';
  }
  return { matchLabels };
}

// The CRD's name rule for IPPool (crds/ippools.yaml: ≤ 63 characters) and Kubernetes' object
// name syntax (a lowercase RFC 1123 subdomain).
const MAX_POOL_NAME = 63;

/**
 * Refuses, before any request, a NAME that cannot be an IPPool's (core's isDnsSubdomain, at most
 * 63): `p/status` would reach pool p's status subresource, "" the collection.
 * @throws CliError naming NAME and the rule; the value cut at 100 characters
 */
export function requirePoolName(name: string): void {
  if (!isDnsSubdomain(name, MAX_POOL_NAME))
    throw new CliError(
      `NAME ${quoted(name)} is not a valid IPPool name: at most ${MAX_POOL_NAME} lower-case letters, digits, '-' and '.', starting and ending with a letter or digit`,
    );
}

/**
 * The IPPool object the flags describe, checked with the CRD's rules that need no other object
 * (name, masked CIDR, block size for the family, pool at least one block) — before any request.
 * @throws CliError naming the flag and the rule
 */
function poolFromArgs(args: CreateArgs): IPPool {
  requirePoolName(args.name);
  const cidr = parseCidr(args.cidr);
  if (!cidr) throw new CliError(`--cidr ${JSON.stringify(args.cidr)}: ${cidrProblem(args.cidr) ?? ''}`);
  const blockSize = args.blockSize ?? DEFAULT_BLOCK_SIZE[cidr.family];
  if (!isAllowedBlockSize(cidr.family, blockSize)) {
    const { min, max } = BLOCK_SIZE_RANGE[cidr.family];
    throw new CliError(
      `--block-size ${blockSize} is not allowed for IPv${cidr.family}: from ${min} to ${max}`,
    );
  }
  if (cidr.prefixLength > blockSize)
    throw new CliError(`--cidr ${args.cidr} is smaller than one block (--block-size ${blockSize})`);
  // Stored in canonical form (lower-case, shortest IPv6: "FD00:0::/64" → "fd00::/64"), which the
  // CRD requires (crds/ippools.yaml) and core's formatCidr writes.
  const spec: IPPool['spec'] = { cidr: formatCidr(cidr), assignmentMode: args.mode };
  if (args.blockSize !== undefined) spec.blockSize = args.blockSize;
  if (args.nodeSelector) spec.nodeSelector = parseSelector(args.nodeSelector, '--node-selector');
  if (args.namespaceSelector)
    spec.namespaceSelector = parseSelector(args.namespaceSelector, '--namespace-selector');
  if (args.disabled) spec.disabled = true;
  if (args.podcidrBlocks) spec.podCIDRBlocks = true;
  return { apiVersion: API_VERSION, kind: 'IPPool', metadata: { name: args.name }, spec };
}

function alreadyExists(pool: IPPool): CliError {
  return new CliError(`IPPool ${pool.metadata.name} already exists (${pool.spec.cidr}); nothing was changed`);
}

// 3 attempts: a loser's second attempt normally finds the winner (refused at step 1); a third
// covers every contender having lost the first round.
const ATTEMPTS = 3;
// 50–250 ms: longer than one create + LIST + delete round on a busy API server (tens of ms), so
// contenders that all lost do not meet again in lock-step.
const backoffMs = (): number => 50 + Math.random() * 200;

/**
 * Steps 1–4 of the module comment, retried as it says.
 * @throws CliError for a conflict (naming the object) or a name already taken
 */
async function createPool(ds: Datastore, pool: IPPool): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    const existing = await ds.pools.get(pool.metadata.name);
    if (existing) throw alreadyExists(existing);
    const verdict = await validatePool(ds, pool);
    if (!verdict.ok) throw new CliError(`refused: ${verdict.message}`);
    let lost: string | undefined;
    try {
      lost = await createChecked(ds, pool);
    } catch (error) {
      // Created by someone else since the GET.
      const now = isAlreadyExists(error) ? await ds.pools.get(pool.metadata.name) : undefined;
      throw now ? alreadyExists(now) : error;
    }
    if (lost === undefined) return;
    if (attempt >= ATTEMPTS) throw new CliError(`refused: ${lost}, created meanwhile; nothing was created`);
    await new Promise((resolve) => setTimeout(resolve, backoffMs()));
  }
}

/**
 * Steps 2–4: creates `pool`, disabled, checks again, then enables it (unless asked disabled).
 * @returns undefined when created, or the conflict found after the CREATE (ours deleted again)
 * @throws CliError when ours could not be deleted again; AlreadyExistsError when the name was taken
 */
async function createChecked(ds: Datastore, pool: IPPool): Promise<string | undefined> {
  const created = await ds.pools.create({ ...pool, spec: { ...pool.spec, disabled: true } });
  const name = created.metadata.name;
  const verdict = await validatePool(ds, created);
  if (!verdict.ok) {
    try {
      await ds.pools.delete(name, { uid: created.metadata.uid });
    } catch (error) {
      if (!isNotFound(error))
        throw new CliError(
          `refused: ${verdict.message}, created meanwhile; IPPool ${name} is left disabled (its deletion failed: ${(error as Error).message})`,
        );
    }
    return verdict.message;
  }
  if (pool.spec.disabled) return undefined;
  return retryOnConflict(async (round) => {
    const current = round === 1 ? created : await ds.pools.get(name);
    if (!current) throw new CliError(`IPPool ${name} was deleted while it was being enabled`);
    const { disabled: _, ...spec } = current.spec;
    await ds.pools.update({ ...current, spec });
    return undefined;
  });
}

export function poolCreateCommand(ctx: CommandContext) {
  return defineCommand<CreateArgs, IPPool>({
    ctx,
    command: 'create <name>',
    describe: 'Create an IP pool (refused when it overlaps a pool or blocks of another size)',
    builder: (y) =>
      withYes(y, false)
        .positional('name', { type: 'string', demandOption: true, describe: 'IPPool name (≤ 63 characters)' })
        .option('cidr', {
          type: 'string',
          demandOption: true,
          describe: 'Pool CIDR, strictly masked, e.g. 10.244.0.0/16',
        })
        .option('block-size', {
          type: 'string',
          coerce: integerFlag('block-size', { what: 'a prefix length' }),
          describe: 'Block prefix length (default 26 / 122)',
        })
        .option('node-selector', { type: 'string', describe: 'Nodes allowed: label k=v[,k2=v2]' })
        .option('namespace-selector', { type: 'string', describe: 'Namespaces allowed: label k=v[,k2=v2]' })
        .option('mode', {
          choices: ['Automatic', 'Manual'] as const,
          default: 'Automatic' as const,
          describe: 'Manual pools are used only when requested',
        })
        .option('disabled', { type: 'boolean', default: false, describe: 'Create it disabled' })
        .option('podcidr-blocks', {
          type: 'boolean',
          default: false,
          describe: "Each node's blocks are its podCIDRs, created by the controller (adopting host-local)",
        })
        .example('$0 pool create default-v4 --cidr 10.244.0.0/16', 'An IPv4 pool of /26 blocks')
        .example(
          '$0 pool create tenant-a --cidr 10.250.0.0/20 --block-size 28 --namespace-selector team=a --mode Manual',
          'A pool only team=a namespaces may request',
        ),
    prepare: poolFromArgs,
    run: async (args, conn, pool) => {
      await createPool(conn.ds, pool);
      println(ctx.io.stdout, `IPPool ${args.name} (${pool.spec.cidr}) created.`);
      return EXIT.OK;
    },
  });
}
