/**
 * The one way the agent runs a host command (`nft` for masquerade, `ip` for routes): no shell,
 * `stdin` written to it, its output collected, SIGKILLed after `timeoutMs`.
 */
import { spawn } from 'node:child_process';

/** How a command ended: its exit status (-1 when none) and output. */
export interface CommandRun {
  readonly status: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** A host command failed: each command's own class (NftCommandError, RouteCommandError) extends it. */
export abstract class CommandError extends Error {
  /** The argv that failed, e.g. ["nft", "-f", "-"]. */
  readonly argv: readonly string[];

  constructor(message: string, argv: readonly string[], options?: { cause?: unknown }) {
    super(message, options);
    this.argv = argv;
  }
}

export interface CommandOptions {
  /** Written to the command's stdin, which is then closed. Default empty. */
  readonly stdin?: string;
  /** The run is SIGKILLed after this long, ms. */
  readonly timeoutMs: number;
  /** The class thrown when the command cannot be spawned or was killed (the caller's own). */
  readonly fails: new (
    message: string,
    argv: readonly string[],
    options?: { cause?: unknown },
  ) => CommandError;
}

/**
 * Runs `argv[0]` with `argv[1..]`. A non-zero exit is a result, not an error: the caller reads it.
 * @throws `options.fails` when the command cannot be spawned or is killed (timeout)
 */
export function runCommand(argv: readonly string[], options: CommandOptions): Promise<CommandRun> {
  const { timeoutMs, fails } = options;
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0] as string, argv.slice(1), {
      stdio: ['pipe', 'pipe', 'pipe'],
      timeout: timeoutMs,
      killSignal: 'SIGKILL',
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', (cause) => reject(new fails(`${argv.join(' ')}: ${cause.message}`, argv, { cause })));
    child.on('close', (status, signal) => {
      if (signal) reject(new fails(`${argv.join(' ')}: killed by ${signal} (timeout ${timeoutMs} ms)`, argv));
      else resolve({ status: status ?? -1, stdout, stderr });
    });
    child.stdin.on('error', () => undefined); // an early exit closes stdin; the exit status reports it
    child.stdin.end(options.stdin ?? '');
  });
}
