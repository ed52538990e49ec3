/**
 * `ipamctl show`: pool utilisation (default), `--blocks`, `--node N`, `--ip X`. Read-only.
 * Tables by default, `-o json|yaml` for scripts.
 */
import { affineSelector, IPAM_CONFIG_NAME, listNodeAllocations, requestedManualPools } from 'blockipam/core';
import type { IPPool } from 'blockipam/core';
import type { KubeDatastore } from 'blockipam/core/kube';
import { defineCommand, nodeNameFlag, nonEmptyFlag, withFormat } from '../command.ts';
import type { CommandContext, GlobalFlags } from '../command.ts';
import { CliError, EXIT, println } from '../io.ts';
import type { ExitCode, Io } from '../io.ts';
import { lookupAddress, parseAddress } from '../lookup.ts';
import { print, renderTable } from '../output.ts';
import type { Cell, Format } from '../output.ts';
import { nodeHeadroom } from '../show/node.ts';
import type { NodeHeadroom } from '../show/node.ts';
import { nodeRouting, type NodeRouting } from '../show/routes.ts';
import { blockUsage, poolUsage } from '../show/usage.ts';

interface ShowArgs extends GlobalFlags {
  output: Format;
  blocks?: boolean;
  node?: string;
  ip?: string;
}

export function showCommand(ctx: CommandContext) {
  return defineCommand<ShowArgs>({
    ctx,
    command: 'show',
    describe: 'Show pool utilisation, blocks, a node’s addresses, or who holds an address',
    builder: (y) =>
      withFormat(y)
        .option('blocks', { type: 'boolean', describe: 'One row per block' })
        .option('node', {
          type: 'string',
          requiresArg: true,
          coerce: nodeNameFlag,
          describe:
            "NODE's affine blocks with free counts, the agent's watermark per pool, which of its blocks other nodes cannot route to and why, and every address allocated for it",
        })
        .option('ip', {
          type: 'string',
          requiresArg: true,
          coerce: nonEmptyFlag('--ip', 'an address'),
          describe: 'Who holds this address',
        })
        .conflicts('ip', ['node', 'blocks'])
        .conflicts('node', 'blocks')
        .example('$0 show', 'Pools: capacity, used, free, blocks, when each runs out at the recent rate')
        .example('$0 show --blocks -o yaml', 'Every block with its pool, affinity and use')
        .example(
          '$0 show --node worker-1',
          "A node's headroom vs minFreeAddressesPerNode, its blocks, its addresses (borrowed ones included)",
        )
        .example('$0 show --ip 10.244.3.70', 'The owner of an address: handle, pod, UID, node, sequence'),
    run: async (args, { ds }) => {
      if (args.ip !== undefined) return showIP(ds, args.ip, args.output, ctx.io);
      if (args.node !== undefined) return showNode(ds, args.node, args.output, ctx.io);
      await showPools(ds, args, ctx.io);
      return EXIT.OK;
    },
  });
}

async function showPools(ds: KubeDatastore, args: ShowArgs, io: Io): Promise<void> {
  const [pools, blocks] = await Promise.all([ds.pools.list(), ds.blocks.list()]);
  if (args.blocks) {
    const rows = blockUsage(pools, blocks);
    print(io.stdout, args.output, rows, () => ({
      headers: ['BLOCK', 'CIDR', 'POOL', 'AFFINITY', 'CAPACITY', 'USED', 'FREE'],
      rows: rows.map((b) => [
        b.name,
        b.cidr,
        b.pool || '(none)',
        b.affinity ?? '(none)',
        b.capacity,
        b.used,
        b.free,
      ]),
    }));
    return;
  }
  const usage = poolUsage(pools, blocks, Date.now());
  // Decimal strings for IPv4 and IPv6 alike: one type per field (an IPv6 pool's counts exceed 2^53).
  const data = usage.map((u) => ({
    ...u,
    capacity: u.capacity.toString(),
    used: u.used.toString(),
    free: u.free.toString(),
  }));
  print(io.stdout, args.output, data, () => ({
    headers: ['POOL', 'CIDR', 'BLOCK SIZE', 'CAPACITY', 'USED', 'FREE', 'BLOCKS', 'DISABLED', 'EXHAUSTS'],
    rows: usage.map((u) => [
      u.name,
      u.cidr,
      u.blockSize,
      u.capacity,
      u.used,
      u.free,
      u.blocks,
      u.disabled,
      u.exhausts,
    ]),
  }));
}

/**
 * `show --node`. A node without a Node object is shown only while it still holds blocks or
 * addresses, and then exits 1 naming it.
 * @throws CliError when there is no Node `node` and nothing is held for it
 */
async function showNode(ds: KubeDatastore, node: string, format: Format, io: Io): Promise<ExitCode> {
  const [affine, allocations, nodeObject, config, pools, reservations, ipamNode, blocks] = await Promise.all([
    ds.blocks.list({ labelSelector: affineSelector(node) }),
    listNodeAllocations(ds, node),
    ds.getNode(node),
    ds.configs.get(IPAM_CONFIG_NAME),
    ds.pools.list(),
    ds.reservations.list(),
    ds.ipamNodes.get(node),
    ds.blocks.list(),
  ]);
  if (!nodeObject && affine.length === 0 && allocations.length === 0)
    throw new CliError(
      `Node ${node} does not exist and holds no block or address (kubectl get nodes lists them)`,
    );
  const routing = nodeRouting({ node, ipamNode, affine });
  const requested = await requestedOn(ds, node, pools);
  const headroom = nodeHeadroom({
    node,
    requested,
    nodeLabels: nodeObject?.metadata.labels ?? (nodeObject ? {} : undefined),
    config,
    pools,
    reservations,
    affine,
    blocks,
    nowMs: Date.now(),
  });
  const data = {
    node,
    nodeExists: nodeObject !== undefined,
    watermark: headroom.watermark,
    maxBlocksPerNode: headroom.maxBlocksPerNode,
    autoAllocateBlocks: headroom.autoAllocateBlocks,
    pools: headroom.pools,
    unusablePools: headroom.unusable,
    blocks: headroom.blocks,
    routing,
    allocations: allocations.map((a) => ({
      address: a.address,
      block: a.block,
      borrowed: a.borrowed,
      handle: a.allocation.handle,
      namespace: a.allocation.namespace,
      pod: a.allocation.pod,
      podUID: a.allocation.podUID,
      sequence: a.sequence,
    })),
  };
  if (format !== 'table') print(io.stdout, format, data, () => ({ headers: [], rows: [] }));
  else println(io.stdout, nodeSections(node, data, routing).join('\n\n'));
  if (nodeObject) return EXIT.OK;
  println(
    io.stderr,
    `ipamctl: Node ${node} does not exist, yet ${affine.length} block(s) and ${allocations.length} address(es) are held for it (ipamctl check reports them)`,
  );
  return EXIT.PROBLEMS;
}

/** What `show --node` prints (and `-o json|yaml` writes as is). */
interface NodeView {
  nodeExists: boolean;
  watermark: number;
  maxBlocksPerNode: number;
  autoAllocateBlocks: boolean;
  pools: NodeHeadroom['pools'];
  unusablePools: NodeHeadroom['unusable'];
  blocks: NodeHeadroom['blocks'];
  allocations: {
    address: string;
    block: string;
    borrowed: boolean;
    handle: string;
    namespace?: string;
    pod?: string;
  }[];
}

/** The table sections of `show --node`. */
function nodeSections(node: string, data: NodeView, routing: NodeRouting): string[] {
  return [
    `NODE ${node}${data.nodeExists ? '' : ' (no Node object: deleted, or not registered yet)'}   ` +
      `WATERMARK minFreeAddressesPerNode=${data.watermark}${data.watermark === 0 ? ' (pre-claim off)' : ''}` +
      `   maxBlocksPerNode=${data.maxBlocksPerNode}${data.autoAllocateBlocks ? '' : '   autoAllocateBlocks=false'}`,
    renderTable({
      headers: ['POOL', 'FAMILY', 'BLOCKS', 'FREE', 'WATERMARK', 'BELOW', 'AT LIMIT', 'CLAIM'],
      rows: data.pools.map((p) => [
        p.pool,
        `IPv${p.family}`,
        p.blocks,
        p.free,
        data.watermark,
        p.belowWatermark ? 'yes' : 'no',
        p.atBlockLimit ? 'yes' : 'no',
        (p.claim === 'ok' ? 'ok' : `no: ${p.claim}`) +
          (p.requested ? ' (Manual: pending pods request it)' : ''),
      ]),
    }),
    claimSection(node, data.pools, data.unusablePools),
    renderTable({
      headers: ['BLOCK', 'CIDR', 'POOL', 'CAPACITY', 'USED', 'FREE'],
      rows: data.blocks.map((b) => [b.name, b.cidr, b.pool || '(none)', b.capacity, b.used, b.free]),
    }),
    routingSection(node, routing),
    renderTable({
      headers: ['ADDRESS', 'BLOCK', 'BORROWED', 'POD', 'HANDLE'],
      rows: data.allocations.map((a) => [
        a.address,
        a.block,
        a.borrowed,
        a.pod ? `${a.namespace ?? ''}/${a.pod}` : '-',
        a.handle,
      ]),
    }),
  ];
}

/**
 * The Manual pools pending pods on `node` request (core's requestedManualPools: each pod's
 * annotation, else its namespace's — one GET per namespace of those pods).
 */
async function requestedOn(ds: KubeDatastore, node: string, pools: readonly IPPool[]): Promise<Set<string>> {
  if (!pools.some((p) => (p.spec.assignmentMode ?? 'Automatic') !== 'Automatic')) return new Set();
  const pods = (await ds.listPods({ nodeName: node })).filter(
    (p) => (p.status?.phase ?? 'Pending') === 'Pending',
  );
  const names = [...new Set(pods.map((p) => p.metadata.namespace ?? ''))];
  const namespaces = new Map(
    await Promise.all(names.map(async (n) => [n, (await ds.getNamespace(n))?.metadata.annotations] as const)),
  );
  return requestedManualPools(pods, (n) => namespaces.get(n), pools).get(node) ?? new Set();
}

/**
 * The claim lines of `show --node`: "every pool can claim a block", or one line per pool where a
 * claim would fail (core's text) and per pool matching the node that no claim may use.
 */
function claimSection(
  node: string,
  pools: readonly { pool: string; claim: string; why?: string }[],
  unusable: readonly { pool: string; why: string }[],
): string {
  const failing = [
    ...pools.filter((p) => p.why !== undefined).map((p) => `  ${p.pool}: ${p.why ?? ''}`),
    ...unusable.map((u) => `  ${u.pool}: ${u.why}: no claim uses it`),
  ];
  if (pools.length === 0 && unusable.length === 0) return `CLAIMS by ${node}: no pool selects this node`;
  if (failing.length === 0) return `CLAIMS by ${node}: every pool can claim a block`;
  return [`CLAIMS by ${node} that would fail:`, ...failing].join('\n');
}

/**
 * The routing lines of `show --node`: the next hops other nodes use, then one line per block (or
 * borrowed address) they cannot route to, saying why.
 */
function routingSection(node: string, routing: NodeRouting): string {
  const hops = routing.addresses.length > 0 ? routing.addresses.join(', ') : 'none';
  const head = routing.ipamNode
    ? `ROUTES from other nodes to ${node}: next hops ${hops}`
    : `ROUTES from other nodes to ${node}: no IPAMNode`;
  if (routing.unrouted.length === 0) return `${head}; every block routed`;
  return [
    `${head}; ${routing.unrouted.length} not routed:`,
    ...routing.unrouted.map((u) => `  ${u.block ?? u.dst} (${u.dst}): ${u.message}`),
  ].join('\n');
}

async function showIP(ds: KubeDatastore, text: string, format: Format, io: Io): Promise<ExitCode> {
  const info = await lookupAddress(ds, parseAddress(text));
  const data = {
    address: info.address,
    allocated: info.holders.length > 0,
    blocks: info.blocks.map((b) => b.metadata.name),
    reservedIn: info.reservedIn,
    owners: info.holders.map((h) => ({
      block: h.block.metadata.name,
      ordinal: h.ordinal,
      affinity: h.block.spec.affinity,
      ...h.allocation,
    })),
  };
  print(io.stdout, format, data, () => {
    const rows: Cell[][] = [['ADDRESS', info.address]];
    if (info.blocks.length === 0) rows.push(['STATUS', 'not in any IPAMBlock']);
    else if (info.holders.length === 0)
      rows.push([
        'STATUS',
        info.reservedIn.length > 0
          ? `reserved in ${info.reservedIn.join(', ')}`
          : `free in ${data.blocks.join(', ')}`,
      ]);
    for (const o of data.owners) {
      rows.push(
        ['BLOCK', `${o.block} (affinity ${o.affinity ?? 'none'})`],
        ['HANDLE', o.handle],
        ['POD', o.pod ? `${o.namespace ?? ''}/${o.pod}` : '-'],
        ['POD UID', o.podUID ?? '-'],
        ['NODE', o.node],
        ['SEQUENCE', o.sequence],
        ['ALLOCATED AT', o.allocatedAt],
      );
    }
    return { headers: ['FIELD', 'VALUE'], rows };
  });
  return EXIT.OK;
}
