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
import { repairCommand } from './commands/repair.ts';
import { adoptCommand } from './commands/adopt.ts';
import { integerFlag } from './command.ts';
import type { CommandContext, CommandFactory, GlobalFlags } from './command.ts';
import { commandName } from './commands/group.ts';
import type { GroupModule } from './commands/group.ts';
import { DEFAULT_REQUEST_TIMEOUT_S, MAX_REQUEST_TIMEOUT_S } from './connect.ts';
import { reportFailure } from './errors.ts';
import { EXIT, println } from './io.ts';
import type { ExitCode, Io } from './io.ts';
import { versionLine } from 'blockipam/core/version';

/** Every subcommand, in the order --help lists them. */
const COMMANDS: readonly CommandFactory[] = [
  checkCommand,
  showCommand,
  releaseCommand,
  repairCommand,
  poolCommand,
  configCommand,
  adoptCommand,
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
      type: 'string',
      global: true,
      // no `default`: yargs would put it in for a flag given without a value
      defaultDescription: String(DEFAULT_REQUEST_TIMEOUT_S),
      coerce: integerFlag('request-timeout', { min: 1, max: MAX_REQUEST_TIMEOUT_S, what: 'seconds' }),
      describe: 'Seconds to wait for one API request (integer)',
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
 * The command tree (name → subcommand names), for the help hint of a usage error — read from the
 * registered command modules, so it cannot drift from what yargs parses.
 */
function commandTree(ctx: CommandContext): ReadonlyMap<string, readonly string[]> {
  return new Map(
    COMMANDS.map((factory) => {
      const module = factory(ctx);
      return [commandName(module), 'subcommands' in module ? (module as GroupModule).subcommands : []];
    }),
  );
}
/** Global flags that take a value as the next word. */
const VALUE_FLAGS = new Set(['--kubeconfig', '--context', '--request-timeout']);

/** The longest real command the words of `argv` name ("pool create", "pool", or ''). */
function knownCommand(argv: readonly string[], tree: ReadonlyMap<string, readonly string[]>): string {
  const words: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    if (VALUE_FLAGS.has(arg)) i++;
    else if (!arg.startsWith('-')) words.push(arg);
  }
  const [top, sub] = words;
  const subs = top !== undefined ? tree.get(top) : undefined;
  if (top === undefined || !subs) return '';
  return sub !== undefined && subs.includes(sub) ? `${top} ${sub}` : top;
}

/**
 * The flags, as typed (`--bogus`, `-x`), of yargs' "Unknown argument(s): a, b" — or undefined when
 * the message is another one or names a word that is not a flag (an unknown command).
 */
function unknownFlags(message: string, argv: readonly string[]): string[] | undefined {
  const listed = /^Unknown arguments?: (.+)$/.exec(message)?.[1]?.split(', ');
  if (!listed) return undefined;
  // yargs lists a kebab-case flag twice, as typed and camel-cased (`bogus-flag, bogusFlag`)
  const camel = (name: string): string => name.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase());
  const names = listed.filter(
    (name) => !listed.some((other) => other !== name && other.includes('-') && camel(other) === name),
  );
  const typed = names.map((name) =>
    argv.find((arg) => {
      if (arg.startsWith('--')) return arg.slice(2).split('=')[0] === name;
      return arg.startsWith('-') && name.length === 1 && arg.slice(1).includes(name);
    }),
  );
  if (typed.includes(undefined)) return undefined;
  return names.map((name) => (name.length === 1 ? `-${name}` : `--${name}`));
}

/**
 * Runs one ipamctl invocation.
 * @returns the exit code (io.ts EXIT): help and `--version` (the only argument: `ipamctl
 *   <version>`, as every role answers it, core/version.ts) → 0; usage error → 2 with the message
 *   on stderr (an unknown flag: one line naming it, with the help hint)
 */
export async function run(io: Io): Promise<ExitCode> {
  if (io.argv.length === 1 && io.argv[0] === '--version') {
    io.stdout.write(versionLine('ipamctl'));
    return EXIT.OK;
  }
  let action: (() => Promise<ExitCode>) | undefined;
  const ctx: CommandContext = { io, defer: (a) => (action = a) };
  let failure: Error | undefined;
  let output = '';
  await parser(ctx).parseAsync([...io.argv], {}, (error: Error | undefined, _argv: unknown, text: string) => {
    failure = error ?? undefined;
    output = text;
  });
  if (failure) {
    const command = knownCommand(io.argv, commandTree(ctx));
    const hint = `Run "ipamctl ${command ? `${command} ` : ''}--help" for usage.`;
    const flags = unknownFlags(failure.message, io.argv);
    if (flags) {
      println(io.stderr, `ipamctl: unknown flag${flags.length > 1 ? 's' : ''} ${flags.join(', ')}. ${hint}`);
      return EXIT.ERROR;
    }
    println(io.stderr, `ipamctl: ${failure.message}`);
    println(io.stderr, hint);
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
