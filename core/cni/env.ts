/**
 * The CNI_* environment of one invocation, validated like the Go skel does it
 * (SPEC §2 "Parameters"; pkg/skel/skel.go, pkg/utils/utils.go).
 */
import { CniCode, CniError } from './errors.ts';

const cniCommands = ['ADD', 'DEL', 'CHECK', 'GC', 'STATUS', 'VERSION'] as const;
export type CniCommand = (typeof cniCommands)[number];

/** Raw process environment; values may be absent. */
export type Env = Readonly<Record<string, string | undefined>>;

/** What ADD, DEL and CHECK identify an attachment by, plus the rest of the CNI_* variables. */
export interface InvocationEnv {
  readonly command: CniCommand;
  /** CNI_CONTAINERID; '' for GC, STATUS and VERSION. */
  readonly containerID: string;
  /** CNI_NETNS; may be '' on DEL (never opened by an IPAM plugin). */
  readonly netns: string;
  /** CNI_IFNAME; '' for GC, STATUS and VERSION. */
  readonly ifname: string;
  /** CNI_ARGS, unparsed ('' when absent). */
  readonly args: string;
  readonly path: string;
}

/** Container IDs (and network names) allowed by the Go skel: `^[a-zA-Z0-9][a-zA-Z0-9_.\-]*$`. */
const idPattern = /^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/;

/** Variables each command needs (skel `getCmdArgsFromEnv`; CNI_PATH only where the skel wants it). */
const required: Readonly<Record<CniCommand, readonly string[]>> = {
  ADD: ['CNI_CONTAINERID', 'CNI_NETNS', 'CNI_IFNAME', 'CNI_PATH'],
  CHECK: ['CNI_CONTAINERID', 'CNI_NETNS', 'CNI_IFNAME', 'CNI_PATH'],
  DEL: ['CNI_CONTAINERID', 'CNI_IFNAME', 'CNI_PATH'],
  GC: [],
  STATUS: [],
  VERSION: [],
};

function isCniCommand(v: string): v is CniCommand {
  return (cniCommands as readonly string[]).includes(v);
}

/**
 * Checks an interface name like the kernel / skel: 1–15 bytes, not `.` or `..`, no `/`, `:`
 * or whitespace. Returns a reason, or undefined when valid.
 */
export function ifnameProblem(name: string): string | undefined {
  if (name.length === 0) return 'interface name is empty';
  if (Buffer.byteLength(name) > 15) return `interface name is longer than 15 bytes: ${name}`;
  if (name === '.' || name === '..') return `interface name cannot be ${name}`;
  if (/[/:\s]/.test(name)) return `interface name contains an invalid character: ${JSON.stringify(name)}`;
  return undefined;
}

/**
 * Reads and validates the CNI_* variables for `command`.
 * @throws CniError code 4 naming the missing or invalid variable(s) (conformance cases 3–5)
 */
export function parseEnv(env: Env): InvocationEnv {
  const command = env.CNI_COMMAND ?? '';
  if (!isCniCommand(command)) {
    throw new CniError(
      CniCode.invalidEnv,
      `unknown CNI_COMMAND: ${command}`,
      `one of ${cniCommands.join(', ')}`,
    );
  }
  const missing = required[command].filter((k) => (env[k] ?? '') === '');
  if (missing.length > 0) {
    throw new CniError(CniCode.invalidEnv, `required env variables [${missing.join(',')}] missing`);
  }
  const out: InvocationEnv = {
    command,
    containerID: env.CNI_CONTAINERID ?? '',
    netns: env.CNI_NETNS ?? '',
    ifname: env.CNI_IFNAME ?? '',
    args: env.CNI_ARGS ?? '',
    path: env.CNI_PATH ?? '',
  };
  if (required[command].includes('CNI_CONTAINERID')) {
    if (!idPattern.test(out.containerID)) {
      throw new CniError(
        CniCode.invalidEnv,
        'invalid characters in containerID',
        `CNI_CONTAINERID=${JSON.stringify(out.containerID)}`,
      );
    }
    const bad = ifnameProblem(out.ifname);
    if (bad !== undefined) throw new CniError(CniCode.invalidEnv, `invalid CNI_IFNAME: ${bad}`);
  }
  return out;
}
