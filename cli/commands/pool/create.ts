/**
 * `ipamctl pool create NAME --cidr C`: validates like the controller (core's validatePool: no
 * overlap with other pools, nor with blocks of another size) before the API server's schema
 * sees it.
 */
import { API_VERSION, isAlreadyExists, parseCidr, validatePool } from 'blockipam/core';
import type { IPPool, LabelSelector } from 'blockipam/core';
import { defineCommand, integerFlag } from '../../command.ts';
import type { CommandContext, GlobalFlags } from '../../command.ts';
import { CliError, EXIT, println } from '../../io.ts';
import { withConnection } from '../with-connection.ts';

interface CreateArgs extends GlobalFlags {
  name: string;
  cidr: string;
  blockSize?: number;
  nodeSelector?: string;
  namespaceSelector?: string;
  mode: 'Automatic' | 'Manual';
  disabled: boolean;
}

/** Parses "k=v,k2=v2" into a matchLabels selector. @throws CliError on bad syntax */
export function parseSelector(text: string, flag: string): LabelSelector {
  const matchLabels: Record<string, string> = {};
  for (const part of text.split(',').filter((p) => p.trim() !== '')) {
    const m = /^\s*([A-Za-z0-9._/-]+)\s*=\s*([A-Za-z0-9._-]*)\s*$/.exec(part);
    if (!m?.[1]) throw new CliError(`${flag}: ${JSON.stringify(part)} is not key=value`);
    matchLabels[m[1]] = m[2] ?? '';
  }
  return { matchLabels };
}

/** The IPPool object the flags describe. @throws CliError for a CIDR that is not strictly masked */
export function poolFromArgs(args: CreateArgs): IPPool {
  if (!parseCidr(args.cidr))
    throw new CliError(`--cidr ${JSON.stringify(args.cidr)} is not a masked CIDR (e.g. 10.244.0.0/16)`);
  const spec: IPPool['spec'] = { cidr: args.cidr, assignmentMode: args.mode };
  if (args.blockSize !== undefined) spec.blockSize = args.blockSize;
  if (args.nodeSelector) spec.nodeSelector = parseSelector(args.nodeSelector, '--node-selector');
  if (args.namespaceSelector)
    spec.namespaceSelector = parseSelector(args.namespaceSelector, '--namespace-selector');
  if (args.disabled) spec.disabled = true;
  return { apiVersion: API_VERSION, kind: 'IPPool', metadata: { name: args.name }, spec };
}

function alreadyExists(pool: IPPool): CliError {
  return new CliError(`IPPool ${pool.metadata.name} already exists (${pool.spec.cidr}); nothing was changed`);
}

export function poolCreateCommand(ctx: CommandContext) {
  return defineCommand<CreateArgs>({
    ctx,
    command: 'create <name>',
    describe: 'Create an IP pool (refused when it overlaps a pool or blocks of another size)',
    builder: (y) =>
      y
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
        .example('$0 pool create default-v4 --cidr 10.244.0.0/16', 'An IPv4 pool of /26 blocks')
        .example(
          '$0 pool create tenant-a --cidr 10.250.0.0/20 --block-size 28 --namespace-selector team=a --mode Manual',
          'A pool only team=a namespaces may request',
        ),
    run: (args) =>
      withConnection(args, ctx.io, async (conn) => {
        const pool = poolFromArgs(args);
        const existing = await conn.ds.pools.get(args.name);
        if (existing) throw alreadyExists(existing);
        const verdict = await validatePool(conn.ds, pool);
        if (!verdict.ok) throw new CliError(`refused: ${verdict.message}`);
        try {
          await conn.ds.pools.create(pool);
        } catch (error) {
          // Created by someone else since the GET.
          const now = isAlreadyExists(error) ? await conn.ds.pools.get(args.name) : undefined;
          throw now ? alreadyExists(now) : error;
        }
        println(ctx.io.stdout, `IPPool ${args.name} (${args.cidr}) created.`);
        return EXIT.OK;
      }),
  });
}
