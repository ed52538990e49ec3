/**
 * A fake direct-path backend (its node IPAM service) for protocol tests: one IPv4 block 10.244.0.0/26 (gateway .1) and one
 * IPv6 block fd00:10:244::/122 (gateway ::1), allocations kept in a map by handle. Seeded from
 * plain objects; records every call so tests can assert what the dispatcher asked for.
 */
import type { Backend } from '../../../ipam-plugin/backend/port.ts';
import { handleOf, UnavailableError } from 'blockipam/core';
import type { AddCall, AddOutcome, AttachmentRef, DelCall, GcCall } from 'blockipam/core/node-ipam';

const attachmentHandle = (a: AttachmentRef): string => handleOf(a.network, a.containerID, a.ifname);

export interface FakeOptions {
  /** handle → addresses (CIDR form) already allocated */
  readonly seed?: Readonly<Record<string, readonly string[]>>;
  /** number of v4 host addresses available (default 61: a /26 less network, gateway, broadcast) */
  readonly capacity?: number;
  /** every call throws core's UnavailableError (the API server unreachable) */
  readonly unreachable?: boolean;
}

export interface FakeBackend extends Backend {
  readonly allocations: Map<string, string[]>;
  readonly calls: { op: string; arg: unknown }[];
  closed: number;
}

export function fakeBackend(o: FakeOptions = {}): FakeBackend {
  const allocations = new Map<string, string[]>(Object.entries(o.seed ?? {}).map(([k, v]) => [k, [...v]]));
  const calls: { op: string; arg: unknown }[] = [];
  const capacity = o.capacity ?? 61;
  const taken = (): Set<string> =>
    new Set([...allocations.values()].flat().map((a) => a.split('/')[0] as string));
  const guard = (op: string, arg: unknown): void => {
    calls.push({ op, arg });
    if (o.unreachable) throw new UnavailableError('connect ECONNREFUSED 127.0.0.1:1');
  };
  const nextV4 = (): string | undefined => {
    const used = taken();
    for (let n = 2; n < 2 + capacity; n++) if (!used.has(`10.244.0.${n}`)) return `10.244.0.${n}`;
    return undefined;
  };
  const add = (req: AddCall): Promise<AddOutcome> => {
    guard('add', req);
    const h = attachmentHandle(req.attachment);
    const existing = allocations.get(h);
    if (existing)
      return Promise.resolve({ kind: 'duplicate', message: `${h} already holds ${existing.join(', ')}` });
    const ips: { address: string; gateway: string }[] = [];
    if (req.staticIPs.length > 0) {
      for (const ip of req.staticIPs) {
        if (ip.includes(':')) ips.push({ address: `${ip}/122`, gateway: 'fd00:10:244::1' });
        else if (!ip.startsWith('10.244.0.') || ip === '10.244.0.1' || taken().has(ip)) {
          return Promise.resolve({ kind: 'addressRefused', message: `${ip} is taken` });
        } else ips.push({ address: `${ip}/26`, gateway: '10.244.0.1' });
      }
    } else {
      if (req.families.includes(4)) {
        const ip = nextV4();
        if (!ip)
          return Promise.resolve({ kind: 'exhausted', message: 'pool default-ipv4 has no free address' });
        ips.push({ address: `${ip}/26`, gateway: '10.244.0.1' });
      }
      if (req.families.includes(6))
        ips.push({
          address: `fd00:10:244::${(allocations.size + 2).toString(16)}/122`,
          gateway: 'fd00:10:244::1',
        });
    }
    allocations.set(
      h,
      ips.map((i) => i.address),
    );
    return Promise.resolve({ kind: 'allocated', ips });
  };
  const backend: FakeBackend = {
    allocations,
    calls,
    closed: 0,
    ipam: {
      add,
      del(req: DelCall) {
        guard('del', req);
        const h = attachmentHandle(req.attachment);
        const n = allocations.get(h)?.length ?? 0;
        allocations.delete(h);
        return Promise.resolve({ released: n });
      },
      check(req) {
        guard('check', req);
        const have = allocations.get(attachmentHandle(req.attachment));
        if (!have) return Promise.resolve({ kind: 'missing' as const, message: 'no allocation' });
        const plain = have.map((x) => x.split('/')[0]);
        const bad = req.expectedIPs.filter((e) => !plain.includes(e));
        return Promise.resolve(
          bad.length > 0
            ? { kind: 'mismatch' as const, message: `not allocated: ${bad.join(',')}` }
            : { kind: 'ok' as const },
        );
      },
      gc(req: GcCall) {
        guard('gc', req);
        const keep = new Set(req.validAttachments.map((v) => `${req.network}.${v.containerID}.${v.ifname}`));
        const released = [...allocations.keys()].filter(
          (h) => h.startsWith(`${req.network}.`) && !keep.has(h),
        );
        for (const h of released) allocations.delete(h);
        return Promise.resolve({ released, errors: [], aliveElsewhere: [] });
      },
      status() {
        guard('status', undefined);
        return Promise.resolve(
          nextV4() ? { kind: 'ready' as const } : { kind: 'notReady' as const, message: 'exhausted' },
        );
      },
    },
    close() {
      backend.closed++;
      return Promise.resolve();
    },
  };
  return backend;
}
