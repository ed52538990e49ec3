#!/usr/bin/env node
/**
 * The node agent executable: `node block-controller/agent/main.ts [run|install] [options]`
 * (options: options.ts; `--help` prints them and `--version` prints `blockipam-agent <version>`,
 * both exit 0). `run` keeps going until SIGTERM/SIGINT; `install` exits 0 once the plugin, its
 * kubeconfig and the conflist are in place. A bad start is one line on stderr and exit 2 (a bad
 * command line, unusable credentials) or 1 (../shared/usage.ts).
 */
import { versionLine } from 'blockipam/core/version';
import { exitStartFailure, exitUsage } from '../shared/usage.ts';
import { runAgent, runInstall } from './agent.ts';
import { parseOptions } from './options.ts';

const NAME = 'blockipam-agent';

let options;
try {
  options = await parseOptions(process.argv.slice(2));
} catch (error) {
  exitUsage(NAME, (error as Error).message);
}
if (options.command === 'help') {
  process.exit(0);
} else if (options.command === 'version') {
  process.stdout.write(versionLine(NAME));
  process.exit(0);
} else if (options.command === 'install') {
  try {
    await runInstall(options);
  } catch (error) {
    exitStartFailure(`${NAME} install`, error, options.kubeconfig !== undefined);
  }
} else {
  try {
    await runAgent(options);
  } catch (error) {
    exitStartFailure(NAME, error, options.kubeconfig !== undefined);
  }
}
