/**
 * blockipam cluster controller (docs/design-controller.md): `node block-controller/controller/main.ts`.
 * Flags below (leader election with client-go's defaults; --metrics-port 9094, Calico
 * kube-controllers' port).
 * `--help` prints them, `--version` prints `blockipam-controller <version>`; both exit 0.
 *
 * A bad start is one line on stderr and exit 2 (a bad command line, unusable credentials) or 1,
 * as the agent's (../shared/usage.ts).
 */
import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import { kubeServerProblem } from 'blockipam/core/kube';
import { versionLine } from 'blockipam/core/version';
import { LOG_LEVELS } from '../shared/index.ts';
import { checkMetricsFlags, exitStartFailure, exitUsage, shownNumber } from '../shared/usage.ts';
import { DEFAULT_NODE_GONE_GRACE_SECONDS } from './reconciler.ts';
import { runController } from './run.ts';

const NAME = 'blockipam-controller';
/** <namespace>/<name>: a DNS label, then a DNS subdomain (Kubernetes' object name rules). */
const CONFIGMAP_REF = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\/[a-z0-9]([-.a-z0-9]{0,251}[a-z0-9])?$/;

let argv;
try {
  argv = await yargs(hideBin(process.argv))
    .scriptName(NAME)
    .strict()
    .version(false)
    .exitProcess(false)
    .fail((message, error) => {
      throw error ?? new Error(message);
    })
    .options({
      version: { type: 'boolean', describe: 'Print "blockipam-controller <version>" and exit' },
      kubeconfig: { type: 'string', describe: 'kubeconfig file (default: the pod service account)' },
      context: { type: 'string', describe: 'kubeconfig context' },
      'api-server': { type: 'string', describe: 'API server URL override' },
      identity: { type: 'string', describe: 'leader-election identity, unique per replica' },
      'lease-namespace': { type: 'string', default: process.env.POD_NAMESPACE ?? 'kube-system' },
      'lease-name': { type: 'string', default: 'blockipam-controller' },
      'lease-duration-seconds': { type: 'number', default: 15 },
      'renew-deadline-seconds': { type: 'number', default: 10 },
      'retry-period-seconds': { type: 'number', default: 2 },
      'metrics-port': {
        type: 'number',
        default: 9094,
        describe: '/metrics, /healthz, /readyz (0 = any free port)',
      },
      'metrics-host': { type: 'string', default: '0.0.0.0' },
      'resync-seconds': { type: 'number', default: 60, describe: 'a pass at least this often' },
      'debounce-ms': { type: 'number', default: 1000, describe: 'wait after a watch event before a pass' },
      'events-namespace': {
        type: 'string',
        default: 'default',
        describe: 'namespace of the Events (only "default" is valid: see the check)',
      },
      'claim-pools-configmap': {
        type: 'string',
        describe: '<namespace>/<name> of the ConfigMap the admission policy reads the claimable pools from',
      },
      'node-gone-grace-seconds': {
        type: 'number',
        default: DEFAULT_NODE_GONE_GRACE_SECONDS,
        describe:
          "a deleted node's blocks stay affine and its addresses allocated this long (0 = no quarantine)",
      },
      'log-level': { choices: LOG_LEVELS, default: 'info' as const },
    })
    .check((a) => {
      if (a.help || a.version) return true;
      checkMetricsFlags(a);
      const server = a['api-server'];
      const serverProblem = server === undefined || server === '' ? undefined : kubeServerProblem(server);
      if (serverProblem) throw new Error(`--api-server ${serverProblem}`);
      for (const key of [
        'lease-duration-seconds',
        'renew-deadline-seconds',
        'retry-period-seconds',
        'resync-seconds',
      ] as const)
        if (!(a[key] > 0)) throw new Error(`--${key} must be a positive number of seconds`);
      // client-go's rule (leaderelection.NewLeaderElector): the holder must renew before others
      // may take over, or two replicas lead at once.
      if (!(a['renew-deadline-seconds'] < a['lease-duration-seconds']))
        throw new Error('--renew-deadline-seconds must be less than --lease-duration-seconds');
      const quarantine = a['node-gone-grace-seconds'];
      if (!(Number.isInteger(quarantine) && quarantine >= 0))
        throw new Error(
          `--node-gone-grace-seconds must be a whole number of seconds >= 0, not ${shownNumber(quarantine)}`,
        );
      const debounce = a['debounce-ms'];
      if (!(Number.isInteger(debounce) && debounce >= 0))
        throw new Error(`--debounce-ms must be a whole number of ms >= 0, not ${shownNumber(debounce)}`);
      // Two replicas with one identity both believe they hold the Lease (an empty one too).
      if (a.identity !== undefined && a.identity.trim() === '')
        throw new Error('--identity must not be empty (it must be unique per replica)');
      // The API server accepts an Event about a cluster-scoped object (IPPool, IPAMBlock, Node:
      // all of ours) only in namespace "default" (core/v1 event validation: a regarding object
      // without a namespace requires the Event's namespace to be "default"); elsewhere every
      // Event is refused with 422, so a wrong value would silently lose them all.
      if (a['events-namespace'] !== 'default')
        throw new Error(
          `--events-namespace must be "default" (got "${a['events-namespace']}"): the API server accepts Events about cluster-scoped objects (IPPool, IPAMBlock, Node) only there`,
        );
      const target = a['claim-pools-configmap'];
      if (target !== undefined && !CONFIGMAP_REF.test(target))
        throw new Error(
          `--claim-pools-configmap must be <namespace>/<name> (DNS labels / subdomain names), not ${JSON.stringify(target)}`,
        );
      return true;
    })
    .parseAsync();
} catch (error) {
  exitUsage(NAME, (error as Error).message);
}
if (argv.help) process.exit(0); // yargs printed it
if (argv.version) {
  process.stdout.write(versionLine(NAME));
  process.exit(0);
}

try {
  await runController({
    kubeconfig: argv.kubeconfig,
    context: argv.context,
    apiServer: argv['api-server'],
    identity: argv.identity,
    leaseNamespace: argv['lease-namespace'],
    leaseName: argv['lease-name'],
    leaseDurationSeconds: argv['lease-duration-seconds'],
    renewDeadlineSeconds: argv['renew-deadline-seconds'],
    retryPeriodSeconds: argv['retry-period-seconds'],
    metricsPort: argv['metrics-port'],
    metricsHost: argv['metrics-host'],
    resyncSeconds: argv['resync-seconds'],
    debounceMs: argv['debounce-ms'],
    nodeGoneGraceSeconds: argv['node-gone-grace-seconds'],
    eventsNamespace: argv['events-namespace'],
    claimPoolsConfigMap: configMapRef(argv['claim-pools-configmap']),
    logLevel: argv['log-level'],
  });
} catch (error) {
  exitStartFailure(NAME, error, argv.kubeconfig !== undefined);
}

function configMapRef(text: string | undefined): { namespace: string; name: string } | undefined {
  if (text === undefined) return undefined;
  const [namespace = '', name = ''] = text.split('/');
  return { namespace, name };
}
