/**
 * The multi-call `blockipam` executable (docs/image.md): one Bun-compiled file that is the CNI
 * plugin, ipamctl, the node agent and the cluster controller; role.ts picks the role from the
 * invoked name or the first argument. Each role's entry module is loaded with a dynamic import
 * only once chosen, and the build splits every role into its own chunk (`bun build --compile
 * --bytecode --format=esm --splitting`, scripts/build-plugin.ts --multi-call), so the plugin's
 * start-up evaluates the plugin's modules only — never yargs, winston, prom-client or
 * @kubernetes/client-node.
 *
 * The role's entry reads `process.argv.slice(2)` as if it had been started alone: for a
 * subcommand (`blockipam agent --help`) the subcommand is removed from process.argv first.
 */
import { EXIT_USAGE, resolveRole, USAGE } from './role.ts';

const resolution = resolveRole(process.argv0, process.argv.slice(2));
if ('help' in resolution) {
  process.stdout.write(USAGE);
  process.exit(0);
}
if ('version' in resolution) {
  const { versionLine } = await import('blockipam/core/version');
  process.stdout.write(versionLine(resolution.version));
  process.exit(0);
}
if ('error' in resolution) {
  process.stderr.write(`${resolution.error}\n${USAGE}`);
  process.exit(EXIT_USAGE);
}
process.argv.splice(2, process.argv.length - 2, ...resolution.args);
switch (resolution.role) {
  case 'plugin':
    await import('../ipam-plugin/main.ts');
    break;
  case 'ipamctl':
    await import('../cli/main.ts');
    break;
  case 'agent':
    await import('../block-controller/agent/main.ts');
    break;
  case 'controller':
    await import('../block-controller/controller/main.ts');
    break;
}
