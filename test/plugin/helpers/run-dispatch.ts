/**
 * Runs one call of the executable's direct path in-process (ipam-plugin/direct.ts) with a (fake)
 * backend and a no-op lock, always free, capturing stdout/stderr.
 */
import { runDirect } from '../../../ipam-plugin/direct.ts';
import type { Backend, BackendFactory } from '../../../ipam-plugin/backend/port.ts';

export interface Invocation {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
  /** stdout parsed when it holds exactly one JSON document, else undefined */
  readonly json?: Record<string, unknown>;
}

export const baseEnv = {
  CNI_CONTAINERID: 'ctr1',
  CNI_NETNS: '/var/run/netns/test',
  CNI_IFNAME: 'eth0',
  CNI_PATH: '/opt/cni/bin',
};

/** A minimal valid netconf for `cniVersion`, with extra ipam fields merged in. */
export function netconf(
  cniVersion: string | undefined,
  ipam: Record<string, unknown> = {},
  top: Record<string, unknown> = {},
): string {
  return JSON.stringify({
    ...(cniVersion !== undefined ? { cniVersion } : {}),
    name: 'net1',
    type: 'ptp',
    ipam: { type: 'blockipam', nodeName: 'node-a', ...ipam },
    ...top,
  });
}

export async function invoke(
  env: Record<string, string | undefined>,
  stdin: string,
  /** The direct path's backend, or a factory of it (which sees the netconf the path was given). */
  backend: Backend | BackendFactory,
): Promise<Invocation> {
  let stdout = '';
  let stderr = '';
  const code = await runDirect(
    {
      env,
      readStdin: () => stdin,
      stdout: { write: (s: string) => (stdout += s) },
      stderr: { write: (s: string) => (stderr += s) },
    },
    {
      backend: typeof backend === 'function' ? backend : () => Promise.resolve(backend),
      lock: () => Promise.resolve({ waited: false, release: () => Promise.resolve() }),
    },
  );
  let json: Record<string, unknown> | undefined;
  try {
    json = JSON.parse(stdout) as Record<string, unknown>;
  } catch {
    json = undefined;
  }
  return { code, stdout, stderr, ...(json ? { json } : {}) };
}
