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
import { commandOf } from './commands/group.ts';
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

/** A registered command's `command` string and, for a group, its subcommands' (usage errors read them). */
interface CommandShape {
  readonly command: string;
  readonly subcommands: readonly string[];
}

/** The registered commands, read from their modules, so usage errors cannot drift from yargs. */
function commandTree(ctx: CommandContext): CommandShape[] {
  return COMMANDS.map((factory) => {
    const module = factory(ctx);
    return {
      command: commandOf(module),
      subcommands: 'subcommands' in module ? (module as GroupModule).subcommands : [],
    };
  });
}

const firstWord = (command: string): string => command.split(' ')[0] ?? '';

/** Global flags that take a value as the next word. */
const VALUE_FLAGS = new Set(['--kubeconfig', '--context', '--request-timeout']);

/** What the words of `argv` name. */
interface Typed {
  /** The longest real command typed ("pool create", "pool", or ''): the help hint names it. */
  name: string;
  /** Its usage line ("pool create <name>"), when one was typed. */
  usage?: string;
  /** The words where a command was expected but none is registered ("frob", "pool frob"). */
  unknown?: string;
  /** The commands that could have been typed there (the top level's, or the group's). */
  choices: readonly string[];
}

function typedCommand(argv: readonly string[], tree: readonly CommandShape[]): Typed {
  const words: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    if (VALUE_FLAGS.has(arg)) i++;
    else if (!arg.startsWith('-')) words.push(arg);
  }
  const [top, sub] = words;
  const choices = tree.map((c) => firstWord(c.command));
  const group = tree.find((c) => firstWord(c.command) === top);
  if (top === undefined) return { name: '', choices };
  if (!group) return { name: '', unknown: top, choices };
  const subs = group.subcommands.map(firstWord);
  const subcommand = group.subcommands.find((c) => firstWord(c) === sub);
  if (subs.length === 0 || sub === undefined) return { name: top, usage: group.command, choices: subs };
  if (!subcommand) return { name: top, unknown: `${top} ${sub}`, choices: subs };
  return { name: `${top} ${sub}`, usage: `${top} ${subcommand}`, choices: [] };
}

/**
 * The operator's sentence for a usage error yargs words for programmers: an unknown command
 * (yargs: "Unknown argument: frob") listing the commands there are; a missing positional (yargs:
 * "Not enough non-option arguments: got 0, need at least 1") naming it with the usage line.
 */
function usageError(message: string, typed: Typed): string {
  if (typed.unknown !== undefined)
    return `unknown command ${JSON.stringify(typed.unknown)} (commands${typed.name ? ` of ${typed.name}` : ''}: ${typed.choices.join(', ')})`;
  const got = /^Not enough non-option arguments: got (\d+)/.exec(message)?.[1];
  if (got === undefined || typed.usage === undefined) return message;
  const missing = (typed.usage.match(/<[^>]+>/g) ?? []).slice(Number(got));
  const choices =
    typed.choices.length > 0 && !typed.name.includes(' ') ? `, one of ${typed.choices.join(', ')}` : '';
  return `missing ${missing.join(' ')}${choices}: ipamctl ${typed.usage}`;
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
 *   on stderr (an unknown flag: one line naming it, with the help hint; an unknown command
 *   listing the commands; a missing positional naming it)
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
    const typed = typedCommand(io.argv, commandTree(ctx));
    const hint = `Run "ipamctl ${typed.name ? `${typed.name} ` : ''}--help" for usage.`;
    const flags = typed.unknown === undefined ? unknownFlags(failure.message, io.argv) : undefined;
    if (flags)
      println(io.stderr, `ipamctl: unknown flag${flags.length > 1 ? 's' : ''} ${flags.join(', ')}. ${hint}`);
    else println(io.stderr, `ipamctl: ${usageError(failure.message, typed)}\n${hint}`);
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
