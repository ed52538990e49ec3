/**
 * The ipamctl dispatcher: parses `io.argv` with yargs, runs the chosen command and returns its
 * exit code (docs/design-cli.md). Nothing here touches process.* — main.ts does that — so tests
 * run whole commands in-process.
 */
import yargs from 'yargs';
import type { Argv } from 'yargs';
import { checkCommand } from './commands/check.ts';
import { releaseCommand } from './commands/release.ts';
import { showCommand } from './commands/show.ts';
import { poolCommand } from './commands/pool.ts';
import { configCommand } from './commands/config.ts';
import type { CommandContext, CommandFactory, GlobalFlags } from './command.ts';
import { reportFailure } from './errors.ts';
import { EXIT, println } from './io.ts';
import type { ExitCode, Io } from './io.ts';

/** Every subcommand, in the order --help lists them. */
const COMMANDS: readonly CommandFactory[] = [
  checkCommand,
  showCommand,
  releaseCommand,
  poolCommand,
  configCommand,
];

/** Builds the parser with every command registered. */
function parser(ctx: CommandContext): Argv<GlobalFlags> {
  const base = yargs()
    .scriptName('ipamctl')
    .usage('$0 <command> [options]\n\nAudit and administer blockipam, the block IPAM for Kubernetes.')
    .option('kubeconfig', {
      type: 'string',
      global: true,
      describe: 'Kubeconfig file (default: $KUBECONFIG, ~/.kube/config, in-cluster)',
    })
    .option('context', { type: 'string', global: true, describe: 'Kubeconfig context to use' })
    .option('request-timeout', {
      type: 'number',
      global: true,
      default: 30,
      describe: 'Seconds to wait for one API request',
    }) as unknown as Argv<GlobalFlags>;
  return COMMANDS.reduce((y, factory) => y.command(factory(ctx)), base)
    .demandCommand(1, 'Name a command (see --help).')
    .recommendCommands()
    .strict()
    .help()
    .alias('help', 'h')
    .version(false)
    .wrap(Math.min(110, Number(ctx.io.env.COLUMNS) || 110))
    .exitProcess(false);
}

/**
 * Runs one ipamctl invocation.
 * @returns the exit code (io.ts EXIT): help → 0; usage error → 2 with the message on stderr
 */
export async function run(io: Io): Promise<ExitCode> {
  let action: (() => Promise<ExitCode>) | undefined;
  const ctx: CommandContext = { io, defer: (a) => (action = a) };
  let failure: Error | undefined;
  let output = '';
  await parser(ctx).parseAsync([...io.argv], {}, (error: Error | undefined, _argv: unknown, text: string) => {
    failure = error ?? undefined;
    output = text;
  });
  if (failure) {
    const leading = io.argv.findIndex((a) => a.startsWith('-'));
    const command = io.argv.slice(0, Math.min(2, leading < 0 ? io.argv.length : leading)).join(' ');
    println(io.stderr, `ipamctl: ${failure.message}`);
    println(io.stderr, `Run "ipamctl ${command ? `${command} ` : ''}--help" for usage.`);
    return EXIT.ERROR;
  }
  if (output) {
    println(io.stdout, output);
    return EXIT.OK;
  }
  if (!action) return EXIT.OK;
  try {
    return await action();
  } catch (error) {
    return reportFailure(io.stderr, error);
  }
}
