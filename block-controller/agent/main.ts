#!/usr/bin/env node
/**
 * The node agent executable: `node block-controller/agent/main.ts [run|install] [options]`
 * (options: options.ts; `--help` prints them and exits 0). `run` keeps going until SIGTERM/SIGINT;
 * `install` exits 0 once the plugin, its kubeconfig and the conflist are in place.
 */
import { runAgent, runInstall } from './agent.ts';
import { parseOptions } from './options.ts';

let options;
try {
  options = await parseOptions(process.argv.slice(2));
} catch (error) {
  process.stderr.write(`blockipam-agent: ${(error as Error).message}\n`);
  process.exit(2);
}
if (options.command === 'help') {
  process.exit(0);
} else if (options.command === 'install') {
  try {
    await runInstall(options);
  } catch (error) {
    process.stderr.write(`blockipam-agent install: ${(error as Error).message}\n`);
    process.exit(1);
  }
} else {
  await runAgent(options);
}
