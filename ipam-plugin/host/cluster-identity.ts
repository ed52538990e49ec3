/**
 * The identity of the cluster the plugin talks to — metadata.uid of the kube-system Namespace,
 * what the node cache is stamped with — remembered in the cache directory, so checking a node
 * cache costs no request. File: `cluster-<16 hex of sha256(server, CA)>.json`, keyed by the API
 * server's address and the CA the plugin trusts it with (another cluster behind the same address
 * has another CA), valid for {@link maxAgeMs}. A node cache stamped with another UID makes the
 * caller re-learn it ({@link learnClusterUID}) before refusing the cache: one GET.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from './atomic-file.ts';
import { ensureDir } from './ensure-dir.ts';

/**
 * 1 h: a backstop. The UID changes only when the cluster is re-created, and then the node cache
 * (written by an agent of the new cluster) disagrees and the UID is re-learnt at once.
 */
export const maxAgeMs = 3_600_000;

interface Stored {
  readonly uid: string;
  readonly learnedAtMs: number;
}

export interface ClusterIdentityOptions {
  readonly cacheDir: string;
  readonly server: string;
  readonly ca?: Buffer | undefined;
  readonly now?: () => number;
}

function fileOf(o: ClusterIdentityOptions): string {
  const hash = createHash('sha256')
    .update(o.server)
    .update('\0')
    .update(o.ca ?? '');
  return join(o.cacheDir, `cluster-${hash.digest('hex').slice(0, 16)}.json`);
}

/** The remembered UID, or undefined when none is remembered (or it is too old). */
export function rememberedClusterUID(o: ClusterIdentityOptions): string | undefined {
  try {
    const s = JSON.parse(readFileSync(fileOf(o), 'utf8')) as Partial<Stored>;
    const now = (o.now ?? Date.now)();
    if (typeof s.uid !== 'string' || typeof s.learnedAtMs !== 'number') return undefined;
    return now - s.learnedAtMs < maxAgeMs && now >= s.learnedAtMs ? s.uid : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Asks the API server (`read`: the kube-system Namespace's UID) and remembers the answer.
 * @returns the UID, or undefined when the namespace has none (nothing is remembered then)
 * @throws whatever `read` throws (the caller treats it as "no node cache")
 */
export async function learnClusterUID(
  o: ClusterIdentityOptions,
  read: () => Promise<string | undefined>,
): Promise<string | undefined> {
  const uid = await read();
  if (!uid) return undefined;
  try {
    ensureDir(o.cacheDir, 0o700);
    const file = fileOf(o);
    const stored: Stored = { uid, learnedAtMs: (o.now ?? Date.now)() };
    writeFileAtomic(file, JSON.stringify(stored));
  } catch {
    // not remembered: the next call asks again
  }
  return uid;
}
