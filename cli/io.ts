/**
 * What an ipamctl run talks to, injected so the whole CLI is testable in-process:
 * arguments, environment, two writable text streams, and the passing of time. Exit codes are values, not
 * process.exit calls.
 */

/** A text sink (process.stdout, or a buffer in tests). */
export interface TextOut {
  write(text: string): unknown;
}

/** One run of ipamctl. */
export interface Io {
  /** Arguments after the program name, e.g. ["check", "-o", "report.json"]. */
  readonly argv: readonly string[];
  /** Environment (KUBECONFIG, HOME, KUBERNETES_SERVICE_HOST/PORT are read). */
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly stdout: TextOut;
  readonly stderr: TextOut;
  /** Directory relative paths (reports, kubeconfig) are resolved against; default process.cwd(). */
  readonly cwd?: string;
  /** Waits `ms` (check's leak confirmation); default a timer. Tests run the late DEL here. */
  readonly sleep?: (ms: number) => Promise<void>;
}

/**
 * Exit codes (docs/design-cli.md §Exit codes):
 * - 0 OK: clean check, or the command did what it was asked;
 * - 1 PROBLEMS: check found problems; release could not release everything it planned;
 * - 2 ERROR: could not run (usage error, API server unreachable, refused input);
 * - 3 UNCONFIRMED: a destructive command printed its plan and changed nothing (no --yes).
 */
export const EXIT = { OK: 0, PROBLEMS: 1, ERROR: 2, UNCONFIRMED: 3 } as const;
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** An error whose message is shown to the operator as is, with exit code 2. */
export class CliError extends Error {
  override readonly name = 'CliError';
}

/** True when `error` is a {@link CliError}. */
export function isCliError(error: unknown): error is CliError {
  return error instanceof Error && error.name === 'CliError';
}

/** Writes `text` and a newline. */
export function println(out: TextOut, text = ''): void {
  out.write(`${text}\n`);
}
