/**
 * Cluster fixtures for plugin tests on the real API server: installs the CRDs (remembering
 * whether they were there before), creates pools / config / namespaces / pods with kubectl,
 * reads blocks back, and removes everything it created (CRDs only if it installed them).
 */
import type { IPAMBlock } from 'blockipam/core';
import { addressTextAt, mustParseCidr } from 'blockipam/core';
import { controlPlane, kubectl } from '../../helpers/control-plane.ts';
import { installCrds } from '../../helpers/crds.ts';

const crdNames = ['ippools', 'ipamblocks', 'ipamconfigs', 'ipreservations'].map(
  (p) => `${p}.ipam.blockipam.io`,
);

function must(args: readonly string[], input?: string): string {
  const r = kubectl(args, input === undefined ? {} : { input });
  if (r.status !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

export interface Fixture {
  readonly kubeconfig: string;
  /** kubectl apply of one manifest (object); remembered for cleanup. */
  apply(obj: Record<string, unknown>): void;
  /** kubectl apply expected to fail; returns stderr. */
  applyFails(obj: Record<string, unknown>): string;
  pool(name: string, cidr: string, blockSize: number, extra?: Record<string, unknown>): void;
  blocks(): IPAMBlock[];
  /** Every (handle → addresses) held in any block. */
  allocations(): Map<string, string[]>;
  /** Deletes blocks, then everything applied, then CRDs if this fixture installed them. */
  cleanup(): void;
}

export function fixture(): Fixture {
  const cp = controlPlane();
  const hadCrds = kubectl(['get', 'crd', crdNames[0] as string]).status === 0;
  installCrds({ once: false });
  waitServed();
  const created: { kind: string; name: string; namespace?: string }[] = [];
  const f: Fixture = {
    kubeconfig: cp.adminKubeconfig,
    apply(obj) {
      must(['apply', '-f', '-'], JSON.stringify(obj));
      const meta = obj.metadata as { name: string; namespace?: string };
      created.push({
        kind: String(obj.kind),
        name: meta.name,
        ...(meta.namespace ? { namespace: meta.namespace } : {}),
      });
    },
    applyFails(obj) {
      const r = kubectl(['apply', '-f', '-'], { input: JSON.stringify(obj) });
      if (r.status === 0) throw new Error('apply unexpectedly succeeded');
      return r.stderr;
    },
    pool(name, cidr, blockSize, extra = {}) {
      f.apply({
        apiVersion: 'ipam.blockipam.io/v1alpha1',
        kind: 'IPPool',
        metadata: { name },
        spec: { cidr, blockSize, ...extra },
      });
    },
    blocks() {
      return (JSON.parse(must(['get', 'ipamblocks', '-o', 'json'])) as { items: IPAMBlock[] }).items;
    },
    allocations() {
      const out = new Map<string, string[]>();
      for (const b of f.blocks()) {
        const cidr = mustParseCidr(b.spec.cidr);
        for (const [ord, a] of Object.entries(b.spec.allocations)) {
          const list = out.get(a.handle) ?? [];
          list.push(`${addressTextAt(cidr, Number(ord))}/${cidr.prefixLength}`);
          out.set(a.handle, list);
        }
      }
      return out;
    },
    cleanup() {
      kubectl(['delete', 'ipamblocks', '--all', '--wait=false']);
      for (const c of created.reverse())
        kubectl([
          'delete',
          c.kind,
          c.name,
          ...(c.namespace ? ['-n', c.namespace] : []),
          '--ignore-not-found',
          '--wait=false',
        ]);
      if (!hadCrds) kubectl(['delete', 'crd', ...crdNames, '--ignore-not-found']);
    },
  };
  return f;
}

/** Polls until every kind lists without error (a re-created CRD answers 429 for a moment). */
function waitServed(): void {
  const until = Date.now() + 60_000;
  const kinds = crdNames.map((n) => n.split('.')[0]).join(',');
  while (kubectl(['get', kinds, '-o', 'name']).status !== 0) {
    if (Date.now() > until) throw new Error(`${kinds} not served within 60 s`);
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 200);
  }
}
