/**
 * How the daemons' entries (agent/main.ts, controller/main.ts) report a bad start: one line on
 * stderr, `<name>: <problem>`, and an exit code — never a stack trace or the help text.
 *   2 (EXIT_USAGE): a bad command line (yargs' message names the flag or value) or unusable
 *     credentials (core's KubeconfigError: a missing or broken kubeconfig, no service account
 *     outside a cluster) — as ipamctl's and the multi-call entry's usage errors;
 *   1 (EXIT_FAILURE): anything else that stops the daemon.
 */
import { isIP } from 'node:net';
import { isKubeconfigError } from 'blockipam/core/kube';
import { isDnsSubdomain } from 'blockipam/core';

const EXIT_USAGE = 2;
const EXIT_FAILURE = 1;

/**
 * yargs' message for unknown flags lists each twice, kebab and camel case ("Unknown arguments:
 * metrics-prot, metricsProt"); this keeps the spelling the user typed.
 */
function usageText(message: string): string {
  const m = /^(Unknown arguments?): (.*)$/s.exec(message);
  if (!m) return message;
  const names = (m[2] ?? '').split(', ');
  const kebab = new Set(
    names
      .filter((n) => n.includes('-'))
      .map((n) => n.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase())),
  );
  const kept = names.filter((n) => !kebab.has(n));
  return `${kept.length === 1 ? 'Unknown argument' : 'Unknown arguments'}: ${kept.join(', ')}`;
}

/**
 * The one-line report of an error that stopped the daemon, and its exit code.
 * @param name the executable's name, e.g. "blockipam-agent"
 * @param kubeconfigGiven whether --kubeconfig was given (else a credentials error hints at it)
 */
function startFailure(
  name: string,
  error: unknown,
  kubeconfigGiven: boolean,
): { readonly line: string; readonly code: number } {
  const message = (error instanceof Error ? error.message : String(error)).split('\n')[0] ?? '';
  if (!isKubeconfigError(error)) return { line: `${name}: ${message}\n`, code: EXIT_FAILURE };
  const hint = kubeconfigGiven ? '' : ' (outside a cluster: pass --kubeconfig FILE)';
  return { line: `${name}: ${message}${hint}\n`, code: EXIT_USAGE };
}

/** Writes `<name>: <message>` (a usage error) and exits EXIT_USAGE. */
export function exitUsage(name: string, message: string): never {
  process.stderr.write(`${name}: ${usageText(message)}\n`);
  process.exit(EXIT_USAGE);
}

/** Writes startFailure's line and exits with its code. */
export function exitStartFailure(name: string, error: unknown, kubeconfigGiven: boolean): never {
  const { line, code } = startFailure(name, error, kubeconfigGiven);
  process.stderr.write(line);
  process.exit(code);
}

/** A parsed number option as a message shows it: yargs turns "abc" into NaN. */
export const shownNumber = (value: number): string => (Number.isNaN(value) ? 'a number' : String(value));

/**
 * A Kubernetes node name: a DNS subdomain (RFC 1123, lower case, ≤ 253 characters), as the
 * API server validates Node names (k8s.io/apimachinery validation.IsDNS1123Subdomain).
 */
export const isNodeName = (name: string): boolean => isDnsSubdomain(name);

/** The highest TCP port (a larger --metrics-port is refused naming it, not a RangeError at listen). */
const MAX_PORT = 65_535;

/**
 * Checks the daemons' shared HTTP flags (/metrics, /healthz, /readyz), for yargs' `.check`.
 * @throws Error naming the flag and the value when --metrics-port is not a port 0-65535 or
 *   --metrics-host not a host it can bind ({@link isBindHost})
 */
export function checkMetricsFlags(a: {
  readonly 'metrics-port': number;
  readonly 'metrics-host': string;
}): void {
  const port = a['metrics-port'];
  if (!(Number.isInteger(port) && port >= 0 && port <= MAX_PORT))
    throw new Error(
      `--metrics-port must be a port 0-${MAX_PORT} (0 = any free port), not ${shownNumber(port)}`,
    );
  if (!isBindHost(a['metrics-host']))
    throw new Error(
      `--metrics-host must be an IP address or a host name, not ${JSON.stringify(a['metrics-host'])}`,
    );
}

/**
 * A --metrics-host value the HTTP server can bind: an IPv4 or IPv6 address, or a host name of
 * letters, digits, '-' and '.' (resolved at listen).
 */
const isBindHost = (host: string): boolean =>
  isIP(host) !== 0 ||
  // digits and dots only is meant as an IPv4 address: 999.1.1.1 is none, and no host name either
  (!/^[0-9.]+$/.test(host) &&
    host.length <= 253 &&
    /^[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?(\.[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?)*$/.test(host));
