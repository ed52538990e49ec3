/**
 * Reads the kubeconfig through a node-local cache of its parsed form, so the warm path never
 * loads the YAML parser (measured: the `yaml` package costs more start-up than the whole
 * protocol layer; docs/design-plugin.md "Caches"). The cache file is keyed by the kubeconfig
 * path and valid while the kubeconfig's and every certificate-authority / client-certificate /
 * client-key file's size, mtime and inode are unchanged (a certificate rotated in place must
 * be picked up: tester), and for at most {@link maxAgeMs}; it holds the same credentials as
 * the kubeconfig, so it is written 0600 in the plugin's cache directory.
 */
import { createHash } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { KubeClientConfig } from 'blockipam/core/kube';
import { writeFileAtomic } from './atomic-file.ts';
import { ensureDir } from './ensure-dir.ts';

/** 5 min: a backstop bound on staleness should a change slip between a read and its stamp. */
export const maxAgeMs = 300_000;

interface Stored {
  readonly stamp: string;
  readonly savedAtMs?: number;
  /** the referenced files and their stamps when they were read */
  readonly files?: readonly { path: string; stamp: string }[];
  readonly server: string;
  readonly token?: string;
  readonly tokenFile?: string;
  readonly insecureSkipTLSVerify?: boolean;
  /** base64 */
  readonly ca?: string;
  readonly cert?: string;
  readonly key?: string;
}

const b64 = (b: Buffer | undefined): string | undefined => b?.toString('base64');
const buf = (s: string | undefined): Buffer | undefined =>
  s === undefined ? undefined : Buffer.from(s, 'base64');

/**
 * @returns the connection settings of `path`
 * @throws KubeconfigError (from core) when the file is unreadable or incomplete
 */
export async function loadKubeconfigCached(path: string, cacheDir: string): Promise<KubeClientConfig> {
  const stamp = stampOf(path);
  const file = join(
    cacheDir,
    `kubeconfig-${createHash('sha256').update(path).digest('hex').slice(0, 16)}.json`,
  );
  try {
    const s = JSON.parse(readFileSync(file, 'utf8')) as Stored;
    const fresh =
      s.stamp === stamp &&
      stamp !== 'missing' &&
      s.savedAtMs !== undefined &&
      Date.now() - s.savedAtMs < maxAgeMs &&
      (s.files ?? []).every((f) => f.stamp !== 'missing' && stampOf(f.path) === f.stamp);
    if (fresh) return fromStored(s);
  } catch {
    // absent or unreadable: parse the kubeconfig
  }
  const { loadKubeconfig } = await import('blockipam/core/kubeconfig');
  const cfg = loadKubeconfig(path);
  try {
    ensureDir(cacheDir, 0o700);
    const stored: Stored = {
      stamp,
      savedAtMs: Date.now(),
      files: (cfg.files ?? []).map((p) => ({ path: p, stamp: stampOf(p) })),
      server: cfg.server,
      token: cfg.token,
      tokenFile: cfg.tokenFile,
      insecureSkipTLSVerify: cfg.insecureSkipTLSVerify,
      ca: b64(cfg.ca),
      cert: b64(cfg.cert),
      key: b64(cfg.key),
    };
    writeFileAtomic(file, JSON.stringify(stored), 0o600);
  } catch {
    // a cache that cannot be written only costs the parse next time
  }
  return cfg;
}

/** size, mtime and inode of `path`, or "missing". */
function stampOf(path: string): string {
  try {
    const st = statSync(path);
    return `${st.size}:${st.mtimeMs}:${st.ino}`;
  } catch {
    return 'missing';
  }
}

function fromStored(s: Stored): KubeClientConfig {
  const out: KubeClientConfig = { server: s.server };
  if (s.token !== undefined) out.token = s.token;
  if (s.tokenFile !== undefined) out.tokenFile = s.tokenFile;
  if (s.insecureSkipTLSVerify !== undefined) out.insecureSkipTLSVerify = s.insecureSkipTLSVerify;
  if (s.files !== undefined && s.files.length > 0) out.files = s.files.map((f) => f.path);
  const ca = buf(s.ca);
  const cert = buf(s.cert);
  const key = buf(s.key);
  if (ca) out.ca = ca;
  if (cert) out.cert = cert;
  if (key) out.key = key;
  return out;
}
