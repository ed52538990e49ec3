/**
 * The demo's address table (scripts/demo.sh): for every Running pod of a namespace, its node,
 * its address and the IPAMBlock that address came from (CIDR and affinity), read with the
 * cluster's kubectl. Exits 1 when a pod has no address, or its address is in no block, or in a
 * block affine to another node (each node hands out its own blocks; borrowing is the exception
 * the demo does not expect with one /26 per node and a handful of pods).
 *
 * Usage: node scripts/demo-report.ts KUBECTL KUBECONFIG NAMESPACE SELECTOR
 * Prints the table on stdout; on success the last line is `PAIRS <pod> <ip> <pod> <ip>…`, one
 * pod per node, for the cross-node ping.
 */
import { execFileSync } from 'node:child_process';
import { cidrContains, parseCidr, parseIP } from 'blockipam/core';

const [kubectl, kubeconfig, namespace, selector] = process.argv.slice(2);
if (!kubectl || !kubeconfig || !namespace || !selector) {
  console.error('usage: demo-report.ts KUBECTL KUBECONFIG NAMESPACE SELECTOR');
  process.exit(2);
}

interface Pod {
  metadata: { name: string };
  spec: { nodeName?: string };
  status: { phase?: string; podIP?: string };
}
interface Block {
  metadata: { name: string };
  spec: { cidr: string; affinity?: string | null };
}

const get = <T>(args: readonly string[]): T[] =>
  (
    JSON.parse(
      execFileSync(kubectl, ['--kubeconfig', kubeconfig, 'get', ...args, '-o', 'json'], {
        encoding: 'utf8',
        maxBuffer: 64 << 20,
      }),
    ) as { items: T[] }
  ).items;

/** True when address `ip` is inside `cidr` (core's address math). */
function inCidr(ip: string, cidr: string): boolean {
  const address = parseIP(ip);
  const range = parseCidr(cidr);
  return address !== undefined && range !== undefined && cidrContains(range, address);
}

const pods = get<Pod>(['pods', '-n', namespace, '-l', selector]).filter((p) => p.status.phase === 'Running');
const blocks = get<Block>(['ipamblocks']);
const rows: string[][] = [['POD', 'NODE', 'ADDRESS', 'BLOCK', 'BLOCK AFFINITY']];
const failures: string[] = [];
const byNode = new Map<string, { pod: string; ip: string }>();
for (const p of pods.sort((x, y) => (x.spec.nodeName ?? '').localeCompare(y.spec.nodeName ?? ''))) {
  const node = p.spec.nodeName ?? '?';
  const ip = p.status.podIP ?? '';
  const block = ip ? blocks.find((b) => inCidr(ip, b.spec.cidr)) : undefined;
  const affinity = block?.spec.affinity ?? '';
  rows.push([p.metadata.name, node, ip || '-', block?.spec.cidr ?? '-', affinity || '-']);
  if (!ip) failures.push(`${p.metadata.name} has no address`);
  else if (!block) failures.push(`${p.metadata.name}'s ${ip} is in no IPAMBlock`);
  else if (affinity !== node)
    failures.push(
      `${p.metadata.name} on ${node} got ${ip} from ${block.spec.cidr}, affine to ${affinity || 'nobody'}`,
    );
  if (ip && !byNode.has(node)) byNode.set(node, { pod: p.metadata.name, ip });
}
const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length))) ?? [];
for (const r of rows) console.log(r.map((c, i) => c.padEnd(widths[i] ?? 0)).join('  '));
if (pods.length === 0) failures.push(`no Running pod matches ${selector} in ${namespace}`);
if (failures.length > 0) {
  for (const f of failures) console.error(`demo: ${f}`);
  process.exit(1);
}
console.log(`PAIRS ${[...byNode.values()].map((v) => `${v.pod} ${v.ip}`).join(' ')}`);
