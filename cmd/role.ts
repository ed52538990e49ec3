/**
 * Which part a multi-call `blockipam` executable plays (cmd/blockipam.ts). Pure: no imports, so
 * the plugin's start-up pays nothing for it.
 *
 * The role comes from the name the executable was invoked by (`basename(process.argv0)`: a
 * symlink, a hard link, a copy, a PATH name or `exec -a`), as BusyBox does:
 *   blockipam              → the CNI plugin (the name the runtime execs, netconf `ipam.type`)
 *   ipamctl                → ipamctl
 *   blockipam-agent        → the node agent
 *   blockipam-controller   → the cluster controller
 * and, under the plugin's name only, a subcommand as the first argument picks another role:
 * `blockipam agent …`, `blockipam controller …`, `blockipam ipamctl …` (also `blockipam plugin`).
 * A CNI runtime never passes arguments (CNI spec §"Parameters": everything is in the environment
 * and stdin), so `blockipam` with no argument is always the plugin.
 */

const ROLES = ['plugin', 'ipamctl', 'agent', 'controller'] as const;
type Role = (typeof ROLES)[number];

/** Each role's invocation name, also what it answers `--version` with; its subcommand is the role. */
const ROLE_DISPLAY_NAMES: Readonly<Record<Role, string>> = {
  plugin: 'blockipam',
  ipamctl: 'ipamctl',
  agent: 'blockipam-agent',
  controller: 'blockipam-controller',
};

/** Invocation names → role. */
const ROLE_NAMES = new Map(ROLES.map((role) => [ROLE_DISPLAY_NAMES[role], role]));

/** Exit code of a bad invocation (as ipamctl's and the agent's usage errors). */
export const EXIT_USAGE = 2;

export const USAGE = `usage: blockipam                      the CNI IPAM plugin (CNI_COMMAND and stdin, no arguments)
       blockipam agent [options]      the node agent (also as blockipam-agent)
       blockipam controller [options] the cluster controller (also as blockipam-controller)
       blockipam ipamctl <command>    ipamctl (also as ipamctl)
One executable; the role is the name it is invoked by (a symlink) or the first argument.
`;

export type Resolution =
  /** `args`: what the role sees as its arguments (a subcommand removed) */
  | { readonly role: Role; readonly args: readonly string[] }
  /** `blockipam --help`: print USAGE, exit 0 */
  | { readonly help: true }
  /** `<role> --version` (the only argument), any role: print `<name> <version>` (core/version.ts), exit 0 */
  | { readonly version: string }
  /** a bad name or subcommand: print `error` and USAGE, exit EXIT_USAGE */
  | { readonly error: string };

/** `--version` as the only argument of a role: every role answers it the same way. */
function asked(role: Role, args: readonly string[]): Resolution {
  return args.length === 1 && args[0] === '--version'
    ? { version: ROLE_DISPLAY_NAMES[role] }
    : { role, args };
}

/** Last path component of `name` (argv0 may be a path: /opt/cni/bin/blockipam, ./ipamctl). */
function baseName(name: string): string {
  return name.slice(name.lastIndexOf('/') + 1);
}

/**
 * @param argv0 the invoked name (process.argv0)
 * @param args the arguments after it (process.argv.slice(2))
 * @returns the role and its arguments, the help request, the version request (with the role's
 *   name), or an error text naming the bad name or subcommand
 */
export function resolveRole(argv0: string, args: readonly string[]): Resolution {
  const name = baseName(argv0);
  const role = ROLE_NAMES.get(name);
  if (role === undefined)
    return {
      error: `blockipam: unknown role "${name}" (invoked as ${argv0}): link or copy the executable as one of ${[...ROLE_NAMES.keys()].join(', ')}`,
    };
  if (role !== 'plugin') return asked(role, args);
  const first = args[0];
  if (first === undefined) return { role, args };
  const sub = ROLES.find((r) => r === first);
  if (sub !== undefined) return asked(sub, args.slice(1));
  if (first === '--version') return { version: ROLE_DISPLAY_NAMES.plugin };
  if (first === '--help' || first === '-h' || first === 'help') return { help: true };
  return {
    error: `blockipam: unknown subcommand "${first}": one of ${ROLES.join(', ')} (the plugin itself takes no arguments)`,
  };
}
