/**
 * How subcommands plug into the parser: each file under cli/commands/ exports a factory that
 * returns a yargs command module. Handlers do not run work inside yargs; they hand the dispatcher
 * (ipamctl.ts) a deferred action, so parsing (and help / usage errors) is separate from
 * execution and every exit code is a returned value.
 */
import type { Argv, CommandModule } from 'yargs';
import { isConflict, isDnsSubdomain } from 'blockipam/core';
import { connect } from './connect.ts';
import type { Connection, ConnectionFlags } from './connect.ts';
import type { Progress } from './audit/snapshot.ts';
import { EXIT, println } from './io.ts';
import type { ExitCode, Io, TextOut } from './io.ts';
import { FORMATS } from './output.ts';
import type { Format } from './output.ts';

/** What a command factory gets. */
export interface CommandContext {
  readonly io: Io;
  /** Registers the work the parsed command asked for. */
  defer(action: () => Promise<ExitCode>): void;
}

/** Flags every command accepts (declared once, globally, in ipamctl.ts): the connection's. */
export type GlobalFlags = ConnectionFlags;

export type CommandFactory = (ctx: CommandContext) => CommandModule<GlobalFlags, never>;

/** Adds `-o table|json|yaml` to a read command. */
export function withFormat<T>(y: Argv<T>): Argv<T & { output: Format }> {
  const fallback: Format = 'table';
  return y.option('output', { alias: 'o', choices: FORMATS, default: fallback, describe: 'Output format' });
}

/**
 * Adds `-y/--yes` to a command that writes: where it `asks` (default), without it the command
 * prints the plan and exits 3 ({@link unconfirmed}); every other writer accepts it and does not ask.
 */
export function withYes<T>(y: Argv<T>, asks = true): Argv<T & { yes: boolean }> {
  const describe = asks
    ? 'Do it (without: print the plan, change nothing, exit 3)'
    : 'Accepted as by every command that writes (this one does not ask)';
  return y.option('yes', { alias: 'y', type: 'boolean', default: false, describe });
}

/**
 * Declares a command module with typed arguments (the builder's result type flows to the handler).
 * The parsed command first runs `prepare` (input checked before any request; what it throws is
 * reported, exit 2), then `run` with what it returned on an open connection, closed afterwards
 * whatever happens.
 */
export function defineCommand<A extends GlobalFlags, P = unknown>(spec: {
  command: string;
  describe: string;
  builder: (y: Argv<GlobalFlags>) => Argv<A>;
  prepare?: (args: A) => P | Promise<P>;
  run: (args: A, conn: Connection, prepared: P) => Promise<ExitCode>;
  ctx: CommandContext;
}): CommandModule<GlobalFlags, never> {
  return {
    command: spec.command,
    describe: spec.describe,
    builder: spec.builder as unknown as CommandModule<GlobalFlags, never>['builder'],
    handler: (parsed: unknown) => {
      const args = parsed as A;
      spec.ctx.defer(async () => {
        const prepared = (await spec.prepare?.(args)) as P;
        const conn = await connect(args, spec.ctx.io);
        try {
          return await spec.run(args, conn, prepared);
        } finally {
          conn.ds.close();
        }
      });
    },
  };
}

/**
 * The confirmation step of a command that writes: without `--yes`, says so on stderr ("Nothing
 * was changed: re-run with --yes to WHAT.") and returns exit 3; with it, undefined (go on).
 */
export function unconfirmed(io: Io, yes: boolean, what: string): ExitCode | undefined {
  if (yes) return undefined;
  println(io.stderr, `Nothing was changed: re-run with --yes to ${what}.`);
  return EXIT.UNCONFIRMED;
}

// 5 rounds: only the controller's status writes and the agents' block writes race ipamctl's, and
// each round re-reads everything, so a retry never trusts a lost read.
const CAS_ROUNDS = 5;

/**
 * Runs `round` (1, 2, …) until it returns, starting over when it throws what `retryable` accepts
 * (default: a lost compare-and-swap, 409) — at most 5 rounds; `round` re-reads what it writes.
 * @throws what `round` throws otherwise, or on the last round
 */
export async function retryOnConflict<T>(
  round: (n: number) => Promise<T>,
  retryable: (error: unknown) => boolean = isConflict,
): Promise<T> {
  for (let n = 1; ; n++) {
    try {
      return await round(n);
    } catch (error) {
      if (n >= CAS_ROUNDS || !retryable(error)) throw error;
    }
  }
}

// 1,000 objects: below this a LIST takes well under a second and progress would be noise.
const PROGRESS_THRESHOLD = 1000;

/** Progress of long LISTs on `stderr` (`listing pods: 2000 read`), from 1,000 objects on. */
export function progressTo(stderr: TextOut): Progress {
  return (kind, count) => {
    if (count >= PROGRESS_THRESHOLD) println(stderr, `listing ${kind}: ${count} read`);
  };
}

/** `text` JSON-quoted, cut at 100 characters (a name echoed in a refusal). */
export function quoted(text: string): string {
  return JSON.stringify(text.length > 100 ? `${text.slice(0, 100)}…` : text);
}

/**
 * A yargs `coerce` for an integer flag: the value must be written as a decimal integer within
 * [min, max]. Declare the option as `type: 'string'` so the message can quote what was typed
 * (yargs turns "abc" into NaN for number options).
 * @throws Error `--FLAG must be an integer …, not "VALUE"` (yargs reports it as a usage error, exit 2)
 */
export function integerFlag(
  flag: string,
  range: { min?: number; max?: number; what?: string } = {},
): (value: unknown) => number | undefined {
  const { min, max, what } = range;
  const bounds =
    min !== undefined && max !== undefined
      ? ` from ${min} to ${max}`
      : min !== undefined
        ? ` ≥ ${min}`
        : max !== undefined
          ? ` ≤ ${max}`
          : '';
  return (value: unknown) => {
    if (value === undefined) return undefined;
    // A repeated flag arrives as an array: the last one wins, as with kubectl.
    const text = String(Array.isArray(value) ? value.at(-1) : value);
    const n = Number(text);
    if (
      !/^-?[0-9]+$/.test(text.trim()) ||
      !Number.isSafeInteger(n) ||
      (min !== undefined && n < min) ||
      (max !== undefined && n > max)
    )
      throw new Error(
        `--${flag} must be an integer${bounds}${what ? ` (${what})` : ''}, not ${JSON.stringify(text)}`,
      );
    return n;
  };
}

/**
 * The `coerce` of `--node`: {@link nonEmptyFlag}, and a Kubernetes node name (a name no Node can
 * have would show an empty node, or reach another API path).
 * @throws Error `--node "NAME" is not a Kubernetes node name …` (NAME cut at 100 characters)
 */
export function nodeNameFlag(value: unknown): string | undefined {
  const node = nonEmptyFlag('--node', 'a node name')(value);
  if (node !== undefined && !isDnsSubdomain(node))
    throw new Error(
      `--node ${quoted(node)} is not a Kubernetes node name (at most 253 lower-case letters, digits, '-' and '.')`,
    );
  return node;
}

/**
 * A yargs `coerce` for a string flag that names something: a missing or blank value (`-o ""`, or
 * the flag followed by another flag) is a usage error (exit 2) naming the flag — `show --node`
 * with no value queried node "" and exited 0, `check -o ""` audited and wrote no report. Declare
 * the option with `requiresArg: true` too (yargs then refuses `--node` at the end).
 * @param flag as printed, e.g. `--node`, `-o/--output`
 * @throws Error `FLAG needs WHAT, not ""`
 */
export function nonEmptyFlag(flag: string, what: string): (value: unknown) => string | undefined {
  return (value: unknown) => {
    if (value === undefined) return undefined;
    const text = String(Array.isArray(value) ? value.at(-1) : value);
    if (text.trim() === '') throw new Error(`${flag} needs ${what}, not ${JSON.stringify(text)}`);
    return text;
  };
}
