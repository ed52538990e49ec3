/**
 * charts/blockipam with Helm 3 and Helm 4 (built by test/tools/build-helm.sh): `lint --strict`,
 * what `template` renders (the agent DaemonSet, the controller Deployment, pools, policy), the
 * values schema's refusals naming the value, the packaged CRDs equal to crds/, and the rendered
 * chart accepted by the real API server (server-side dry-run). RBAC and the admission policy in
 * action: rbac.int.test.ts.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { after, describe, test } from 'node:test';
import { kubectl } from '../helpers/control-plane.ts';
import { installCrds } from '../helpers/crds.ts';
import { CHART, REPO, find, helm, parseObjects, render, templateArgs } from './helm.ts';
import type { HelmMajor, Rendered } from './helm.ts';

interface Container {
  command: string[];
  args: string[];
  env: { name: string; value?: string; valueFrom?: { fieldRef?: { fieldPath: string } } }[];
  securityContext: { capabilities: { drop: string[]; add?: string[] }; readOnlyRootFilesystem: boolean };
  volumeMounts: { name: string; mountPath: string }[];
  livenessProbe: { httpGet: { path: string } };
  readinessProbe: { httpGet: { path: string } };
}
interface PodSpec {
  hostNetwork?: boolean;
  priorityClassName: string;
  serviceAccountName: string;
  tolerations?: { operator: string }[];
  containers: Container[];
  volumes: { name: string; hostPath?: { path: string } }[];
  affinity?: { podAntiAffinity?: { requiredDuringSchedulingIgnoredDuringExecution: unknown[] } };
}
const podSpec = (o: Rendered): PodSpec => (o.spec as { template: { spec: PodSpec } }).template.spec;

const DUAL_STACK = `pools:
  - {name: v4, cidr: 10.244.0.0/16}
  - {name: v6, cidr: "fd00:10:244::/56", blockSize: 122}
`;

/** One temporary directory for the run's values files and packages, removed at the end. */
const scratch = mkdtempSync(join(tmpdir(), 'chart-test-'));
after(() => rmSync(scratch, { recursive: true, force: true }));
let files = 0;

function valuesFile(text: string): string {
  const file = join(scratch, `values-${files++}.yaml`);
  writeFileSync(file, text);
  return file;
}

for (const major of [3, 4] as const satisfies readonly HelmMajor[]) {
  describe(`charts/blockipam with Helm ${major}`, () => {
    test('helm lint --strict passes with the default values and with dual-stack pools', () => {
      for (const extra of [[], ['-f', valuesFile(DUAL_STACK)]]) {
        const r = helm(major, ['lint', '--strict', CHART, ...extra]);
        assert.equal(r.status, 0, r.stdout + r.stderr);
        assert.match(r.stdout, /1 chart\(s\) linted, 0 chart\(s\) failed/);
      }
    });

    test('the agent DaemonSet: host network, NET_ADMIN only, every taint, downward API, CNI mounts, probes', () => {
      const objects = render(major);
      const ds = find(objects, 'DaemonSet', 'blockipam-agent');
      assert.deepEqual((ds.spec as { updateStrategy: unknown }).updateStrategy, {
        type: 'RollingUpdate',
        rollingUpdate: { maxUnavailable: 1 },
      });
      const spec = podSpec(ds);
      assert.equal(spec.hostNetwork, true);
      assert.equal(spec.priorityClassName, 'system-node-critical');
      assert.deepEqual(spec.tolerations, [{ operator: 'Exists' }]);
      assert.equal(spec.serviceAccountName, 'blockipam-node');
      const [agent] = spec.containers;
      assert.ok(agent);
      assert.deepEqual(agent.securityContext.capabilities, { drop: ['ALL'], add: ['NET_ADMIN'] });
      assert.equal(agent.securityContext.readOnlyRootFilesystem, true);
      const downward = agent.env.filter((e) => e.valueFrom);
      assert.deepEqual(Object.fromEntries(downward.map((e) => [e.name, e.valueFrom?.fieldRef?.fieldPath])), {
        NODE_NAME: 'spec.nodeName',
        POD_NAMESPACE: 'metadata.namespace',
      });
      // the plugin's token is of its own ServiceAccount (bound to the Node), not the agent's
      assert.deepEqual(
        agent.env.find((e) => e.name === 'SERVICE_ACCOUNT_NAME'),
        { name: 'SERVICE_ACCOUNT_NAME', value: 'blockipam-plugin' },
      );
      assert.deepEqual(
        spec.volumes.filter((v) => v.hostPath).map((v) => v.hostPath?.path),
        ['/opt/cni/bin', '/etc/cni/net.d', '/var/run/blockipam'],
      );
      for (const path of ['/opt/cni/bin', '/etc/cni/net.d', '/var/run/blockipam'])
        assert.ok(
          agent.volumeMounts.some((m) => m.mountPath === path),
          `${path} mounted at its host path`,
        );
      assert.equal(agent.livenessProbe.httpGet.path, '/healthz');
      assert.equal(agent.readinessProbe.httpGet.path, '/readyz');
      for (const arg of [
        '--install-cni',
        '--routes=true',
        '--masquerade',
        '--cni-version=1.1.0',
        '--portmap=true',
        // in the mounted /var/run/blockipam: the plugin on the host finds the socket there
        '--ipam-socket=/var/run/blockipam/agent/ipam.sock',
        // the uninstall signal: its own DaemonSet's deletion removes the conflist
        '--owner-daemonset=blockipam-agent',
      ])
        assert.ok(agent.args.includes(arg), `${arg} in ${agent.args.join(' ')}`);
      assert.ok(!agent.args.some((a) => a.startsWith('--mtu')), 'mtu 0: ptp decides');
      for (const arg of [
        '--plugin-log-level=info',
        '--plugin-timeout-ms=30000',
        '--plugin-lock-timeout-ms=60000',
      ])
        assert.ok(agent.args.includes(arg), `${arg} in ${agent.args.join(' ')}`);
      assert.ok(!agent.args.some((a) => a.startsWith('--plugin-log-file')), 'no plugin log file by default');
      assert.ok(!agent.volumeMounts.some((m) => m.name === 'plugin-log'));

      // a plugin log file: the flag, and its directory created on the host (mounted read-only)
      const logged = podSpec(
        find(
          render(major, ['blockipam', '--set', 'plugin.logFile=/var/log/blockipam/plugin.log']),
          'DaemonSet',
          'blockipam-agent',
        ),
      );
      assert.ok(logged.containers[0]?.args.includes('--plugin-log-file=/var/log/blockipam/plugin.log'));
      assert.deepEqual(
        logged.containers[0]?.volumeMounts.find((m) => m.name === 'plugin-log'),
        { name: 'plugin-log', mountPath: '/var/log/blockipam', readOnly: true },
      );
      assert.deepEqual(logged.volumes.find((v) => v.name === 'plugin-log')?.hostPath, {
        path: '/var/log/blockipam',
        type: 'DirectoryOrCreate',
      });

      // values: routes and masquerade off drop NET_ADMIN; mtu, portmap, cniVersion, API server override, IPv6
      const tuned = podSpec(
        find(
          render(major, [
            'blockipam',
            '--set',
            'agent.routes=false,masquerade.enabled=false,cni.mtu=1400,cni.portmap=false,cni.cniVersion=1.0.0,apiServer.host=10.99.0.1',
            '-f',
            valuesFile(DUAL_STACK),
          ]),
          'DaemonSet',
          'blockipam-agent',
        ),
      ).containers[0];
      assert.ok(tuned);
      assert.deepEqual(tuned.securityContext.capabilities, { drop: ['ALL'] });
      for (const arg of [
        '--routes=false',
        '--mtu=1400',
        '--portmap=false',
        '--cni-version=1.0.0',
        '--api-server=https://10.99.0.1:6443',
        '--assign-ipv6',
      ])
        assert.ok(tuned.args.includes(arg), `${arg} in ${tuned.args.join(' ')}`);
      assert.ok(!tuned.args.some((a) => a.startsWith('--masquerade')), 'no NET_ADMIN: nft is never run');
    });

    test('masquerade: on by default with NET_ADMIN, its CIDRs as flags; off: the agent removes the table', () => {
      const agentOf = (...set: string[]): PodSpec['containers'][number] => {
        const c = podSpec(
          find(
            render(major, ['blockipam', ...set.flatMap((v) => ['--set', v])]),
            'DaemonSet',
            'blockipam-agent',
          ),
        ).containers[0];
        assert.ok(c);
        return c;
      };
      const masq = (c: PodSpec['containers'][number]): string[] =>
        c.args.filter((a) => a.startsWith('--masquerade') || a.startsWith('--non-masquerade-cidr'));
      // on, with routes off: NET_ADMIN for the masquerade alone
      const on = agentOf('agent.routes=false', 'masquerade.nonMasqueradeCIDRs={10.99.0.0/24,fd99::/64}');
      assert.deepEqual(masq(on), [
        '--masquerade',
        '--non-masquerade-cidr=10.99.0.0/24',
        '--non-masquerade-cidr=fd99::/64',
      ]);
      assert.deepEqual(on.securityContext.capabilities, { drop: ['ALL'], add: ['NET_ADMIN'] });
      // off (routes on, so NET_ADMIN): the agent removes its table left by an earlier release
      assert.deepEqual(masq(agentOf('masquerade.enabled=false')), ['--masquerade=false']);
    });

    test('the controller: 2 replicas, one per node, PodDisruptionBudget, probes, its own lease', () => {
      const objects = render(major);
      const deploy = find(objects, 'Deployment', 'blockipam-controller');
      assert.equal((deploy.spec as { replicas: number }).replicas, 2);
      const spec = podSpec(deploy);
      assert.equal(spec.serviceAccountName, 'blockipam-controller');
      assert.equal(spec.affinity?.podAntiAffinity?.requiredDuringSchedulingIgnoredDuringExecution.length, 1);
      const [controller] = spec.containers;
      assert.ok(controller);
      assert.deepEqual(controller.securityContext.capabilities, { drop: ['ALL'] });
      assert.ok(controller.args.includes('--lease-name=blockipam-controller'));
      assert.ok(controller.args.includes('--lease-namespace=kube-system'));
      assert.equal(controller.readinessProbe.httpGet.path, '/readyz');
      const pdb = find(objects, 'PodDisruptionBudget', 'blockipam-controller');
      assert.equal((pdb.spec as { maxUnavailable: number }).maxUnavailable, 1);
    });

    test('pools and the IPAMConfig come from the values and are kept on uninstall', () => {
      const objects = render(major, [
        'blockipam',
        '-f',
        valuesFile(`${DUAL_STACK}ipamConfig: {minFreeAddressesPerNode: 8, strictAffinity: true}\n`),
      ]);
      const pools = objects.filter((o) => o.kind === 'IPPool');
      assert.deepEqual(
        pools.map((p) => [p.metadata.name, p.spec]),
        [
          ['v4', { cidr: '10.244.0.0/16' }],
          ['v6', { cidr: 'fd00:10:244::/56', blockSize: 122 }],
        ],
      );
      const config = find(objects, 'IPAMConfig', 'default');
      assert.deepEqual(config.spec, { minFreeAddressesPerNode: 8, strictAffinity: true });
      for (const o of [...pools, config])
        assert.equal(o.metadata.annotations?.['helm.sh/resource-policy'], 'keep', o.metadata.name);
      const defaults = render(major).filter((o) => o.kind === 'IPPool');
      assert.deepEqual(
        defaults.map((p) => [p.metadata.name, p.spec]),
        [['default-ipv4', { cidr: '10.244.0.0/16', blockSize: 26 }]],
      );
    });

    test('the pods’ address families follow the pools: IPv4 only, IPv6 only, dual-stack', () => {
      const args = (values?: string): string[] =>
        podSpec(
          find(
            render(major, values === undefined ? [] : ['blockipam', '-f', valuesFile(values)]),
            'DaemonSet',
            'blockipam-agent',
          ),
        ).containers[0]?.args.filter((a) => a.startsWith('--assign-')) ?? [];
      assert.deepEqual(args(), [], 'IPv4 pool: the agent’s default (IPv4 only)');
      assert.deepEqual(args(DUAL_STACK), ['--assign-ipv6']);
      assert.deepEqual(args('pools: [{name: v6, cidr: "fd00:10:244::/56", blockSize: 122}]\n'), [
        '--assign-ipv4=false',
        '--assign-ipv6',
      ]);
      assert.deepEqual(args('pools: []\n'), [], 'no pool (pools made with ipamctl): IPv4');
    });

    test('no whitespace-only line in the rendered chart (the args without apiServer.host)', () => {
      for (const extra of [[], ['--set', 'apiServer.host=10.99.0.1']]) {
        const r = helm(major, templateArgs(['blockipam', ...extra]));
        assert.equal(r.status, 0, r.stderr);
        const blank = r.stdout.split('\n').flatMap((line, n) => (/^[ \t]+$/.test(line) ? [n + 1] : []));
        assert.deepEqual(blank, [], `whitespace-only lines ${extra.join(' ')}`);
      }
    });

    test('bad pools fail helm template before anything is rendered, naming the value', () => {
      const pools = (...items: string[]): string => `pools:\n${items.map((i) => `  - ${i}\n`).join('')}`;
      const v4 = '{name: a, cidr: 10.244.0.0/16}';
      const cases: [string, RegExp][] = [
        // values.schema.json: syntax and ranges per family
        [
          pools('{name: a, cidr: 10.244.0.0/33}'),
          /at '\/pools\/0\/cidr': '10\.244\.0\.0\/33' does not match/,
        ],
        [pools('{name: a, cidr: 10.256.0.0/16}'), /at '\/pools\/0\/cidr'/],
        [pools('{name: a, cidr: 010.0.0.0/8}'), /at '\/pools\/0\/cidr'/],
        [pools('{name: a, cidr: "fd00::/129"}'), /at '\/pools\/0\/cidr': 'fd00::\/129'/],
        // upper case passes the schema so that _pools.tpl can say how to write it
        [
          pools('{name: a, cidr: "FD00::/64"}'),
          /pools\[0\]\.cidr "FD00::\/64" is not in canonical form .*write fd00::\/64/,
        ],
        [pools('{name: a, cidr: "fd00:::1/64"}'), /at '\/pools\/0\/cidr'/],
        [
          pools(v4, '{name: b, cidr: 10.245.0.0/16, blockSize: 31}'),
          /at '\/pools\/1\/blockSize': maximum: got 31, want 30/,
        ],
        [
          pools('{name: a, cidr: "fd00::/64", blockSize: 30}'),
          /at '\/pools\/0\/blockSize': minimum: got 30, want 116/,
        ],
        // templates/_pools.tpl: across fields and pools
        [
          pools(v4, '{name: b, cidr: 10.245.0.1/16}'),
          /pools\[1\]\.cidr "10\.245\.0\.1\/16" has host bits set .*the network is 10\.245\.0\.0\/16/,
        ],
        [
          pools('{name: a, cidr: "fd00:10:244::1/56", blockSize: 122}'),
          /pools\[0\]\.cidr "fd00:10:244::1\/56" has host bits set .*the network is fd00:10:244::\/56/,
        ],
        [
          pools('{name: a, cidr: "fd00:0010::/64", blockSize: 122}'),
          /pools\[0\]\.cidr "fd00:0010::\/64" is not in canonical form .*write fd00:10::\/64/,
        ],
        [
          pools('{name: a, cidr: "fd00:1::1:0:0:0/80", blockSize: 122}'),
          /pools\[0\]\.cidr "fd00:1::1:0:0:0\/80" is not in canonical form .*write fd00:1:0:0:1::\/80/,
        ],
        [
          pools(v4, '{name: b, cidr: 10.245.0.0/28}'),
          /pools\[1\]\.cidr 10\.245\.0\.0\/28 is smaller than one block: .*at most the default blockSize \(26\)/,
        ],
        [
          pools('{name: a, cidr: 10.244.0.0/24, blockSize: 22}'),
          /pools\[0\]\.cidr 10\.244\.0\.0\/24 is smaller than one block: .*at most pools\[0\]\.blockSize \(22\)/,
        ],
        [pools(v4, '{name: a, cidr: 10.245.0.0/16}'), /pools\[1\]\.name "a" is also pools\[0\]\.name/],
        [
          pools(v4, '{name: b, cidr: 10.244.128.0/17}'),
          /pools\[1\]\.cidr 10\.244\.128\.0\/17 overlaps pools\[0\]\.cidr 10\.244\.0\.0\/16 \(pool "a"\)/,
        ],
        [
          pools('{name: a, cidr: 10.0.0.0/24}', '{name: b, cidr: 10.0.0.0/8}'),
          /pools\[1\]\.cidr 10\.0\.0\.0\/8 overlaps pools\[0\]\.cidr 10\.0\.0\.0\/24/,
        ],
        [
          pools('{name: x, cidr: "fd00:10:244::/56"}', v4, '{name: c, cidr: "fd00:10:244:80::/58"}'),
          /pools\[2\]\.cidr fd00:10:244:80::\/58 overlaps pools\[0\]\.cidr fd00:10:244::\/56/,
        ],
        [
          pools('{name: a, cidr: 169.254.0.0/20}'),
          /pools\[0\]\.cidr 169\.254\.0\.0\/20 overlaps the link-local range/,
        ],
        [
          pools('{name: a, cidr: "fe80::/64"}'),
          /pools\[0\]\.cidr fe80::\/64 overlaps the link-local range fe80::\/10/,
        ],
        [
          pools('{name: a, cidr: 127.0.0.0/16}'),
          /pools\[0\]\.cidr 127\.0\.0\.0\/16 overlaps the loopback range 127\.0\.0\.0\/8/,
        ],
        [
          pools('{name: a, cidr: 96.0.0.0/3}'),
          /pools\[0\]\.cidr 96\.0\.0\.0\/3 overlaps the loopback range 127\.0\.0\.0\/8/,
        ],
        [
          pools('{name: a, cidr: 224.0.0.0/16}'),
          /pools\[0\]\.cidr 224\.0\.0\.0\/16 overlaps the multicast range 224\.0\.0\.0\/4/,
        ],
        [
          pools('{name: a, cidr: "ff02::/64"}'),
          /pools\[0\]\.cidr ff02::\/64 overlaps the multicast range ff00::\/8/,
        ],
      ];
      for (const [values, message] of cases) {
        const r = helm(major, templateArgs(['blockipam', '-f', valuesFile(values)]));
        assert.notEqual(r.status, 0, `accepted:\n${values}`);
        assert.match(r.stderr, message, values);
        assert.equal(r.stdout, '', 'nothing rendered');
      }
      // the same families side by side, an IPv4 and an IPv6 pool with equal leading bits, and
      // adjacent pools are fine
      const ok = render(major, [
        'blockipam',
        '-f',
        valuesFile(
          pools(
            '{name: a, cidr: 10.244.0.0/16}',
            '{name: b, cidr: 10.245.0.0/16, blockSize: 20}',
            '{name: c, cidr: "a00::/16", blockSize: 122}',
            '{name: d, cidr: "fd00:10:244:100::/56", blockSize: 126}',
            '{name: e, cidr: "fd00:10:244::/56"}',
            '{name: f, cidr: 192.168.7.128/26}',
          ),
        ),
      ]);
      assert.equal(ok.filter((o) => o.kind === 'IPPool').length, 6);
    });

    test('the admission policies are rendered unless disabled on purpose — by plain helm template too', () => {
      const kinds = (objects: Rendered[]): string[] =>
        objects
          .filter(
            (o) =>
              o.kind.startsWith('ValidatingAdmissionPolicy') ||
              (o.kind === 'ConfigMap' && o.metadata.name === 'blockipam-claim-pools'),
          )
          .map((o) => `${o.kind}/${o.metadata.name}`)
          .sort();
      const all = [
        'ConfigMap/blockipam-claim-pools',
        ...['node-blocks', 'node-claims', 'node-tokens'].flatMap((p) => [
          `ValidatingAdmissionPolicy/blockipam-${p}`,
          `ValidatingAdmissionPolicyBinding/blockipam-${p}`,
        ]),
      ].sort();
      assert.deepEqual(kinds(render(major)), all);
      // `helm template` without --api-versions (GitOps: helm template | kubectl apply): the same
      const plain = helm(major, ['template', 'blockipam', CHART]);
      assert.equal(plain.status, 0, plain.stderr);
      const objects = parseObjects(plain.stdout);
      assert.deepEqual(kinds(objects), all);
      const controller = find(objects, 'Deployment', 'blockipam-controller') as unknown as {
        spec: { template: { spec: { containers: { args: string[] }[] } } };
      };
      assert.ok(
        controller.spec.template.spec.containers[0]?.args.includes(
          '--claim-pools-configmap=default/blockipam-claim-pools',
        ),
        'the controller publishes the pool list the claims policy reads',
      );
      const off = render(major, ['blockipam', '--set', 'admissionPolicy.enabled=false']);
      assert.deepEqual(kinds(off), []);
      assert.equal(
        off.some((o) => o.kind === 'Role' && o.metadata.name === 'blockipam-controller-claim-pools'),
        false,
        'no ConfigMap rights without the policy',
      );
    });

    test('both workloads run with the runtime’s default seccomp profile', () => {
      const objects = render(major);
      for (const [kind, name] of [
        ['DaemonSet', 'blockipam-agent'],
        ['Deployment', 'blockipam-controller'],
      ] as const) {
        const workload = find(objects, kind, name) as unknown as {
          spec: { template: { spec: { securityContext?: { seccompProfile?: { type: string } } } } };
        };
        assert.deepEqual(
          workload.spec.template.spec.securityContext?.seccompProfile,
          { type: 'RuntimeDefault' },
          name,
        );
      }
    });

    test('values.schema.json refuses bad values, naming each', () => {
      const cases: [string[], RegExp][] = [
        [['--set', 'image.repository='], /\/image\/repository/],
        [['--set', 'foo=1'], /additional properties 'foo' not allowed/],
        [['--set', 'agent.metricsPort=0'], /\/agent\/metricsPort/],
        [['--set', 'cni.cniVersion=2.0.0'], /\/cni\/cniVersion/],
        [['--set', 'pools[0].name=p,pools[0].cidr=10.244.0.0'], /\/pools\/0\/cidr/],
        [
          ['--set', 'pools[0].name=p,pools[0].cidr=10.0.0.0/8,pools[0].colour=red'],
          /additional properties 'colour'/,
        ],
        [['--set', 'ipamConfig.maxBlocksPerNode=0'], /\/ipamConfig\/maxBlocksPerNode/],
        [['--set', 'controller.replicas=0'], /\/controller\/replicas/],
        [['--set', 'agent.tokenExpirationSeconds=60'], /\/agent\/tokenExpirationSeconds/],
        [['--set', 'cni.mtu=100'], /cni\.mtu must be 0/],
        [['--set', 'plugin.logFile=plugin.log'], /\/plugin\/logFile/],
        [['--set', 'plugin.logFile=/plugin.log'], /\/plugin\/logFile/],
        [['--set', 'plugin.logLevel=trace'], /\/plugin\/logLevel/],
        [['--set', 'plugin.lockTimeoutMs=-1'], /\/plugin\/lockTimeoutMs/],
        [['--set', 'plugin.timeoutMs=50'], /\/plugin\/timeoutMs/],
        // the API server refuses 0 with maxSurge 0, after Helm has begun the release
        [['--set-string', 'agent.maxUnavailable=0%'], /\/agent\/maxUnavailable/],
        [['--set-string', 'agent.maxUnavailable=101%'], /\/agent\/maxUnavailable/],
        [['--set', 'agent.maxUnavailable=0'], /\/agent\/maxUnavailable/],
        [['--set', 'masquerade.enabled=yes'], /\/masquerade\/enabled/],
        [['--set', 'agent.resources.requests.cpu=lots'], /\/agent\/resources\/requests\/cpu/],
        [['--set', 'controller.tolerations[0].bogus=1'], /additional properties 'bogus' not allowed/],
        [['--set', 'apiServer.host=999.999.999.999'], /\/apiServer\/host/],
        [['--set', 'image.repository=UPPER/Case'], /\/image\/repository/],
        // the socket path runDir/agent/ipam.sock.v3 must fit 107 bytes; the plugin refuses a longer name
        [['--set', `agent.runDir=/${'x'.repeat(88)}`], /\/agent\/runDir/],
        [['--set', `cni.networkName=n${'a'.repeat(256)}`], /\/cni\/networkName/],
        [['--set', 'masquerade.nonMasqueradeCIDRs={10.0.0.0/33}'], /\/masquerade\/nonMasqueradeCIDRs\/0/],
        [
          ['--set', 'masquerade.nonMasqueradeCIDRs={10.0.0.0/8,10.0.0.0}'],
          /\/masquerade\/nonMasqueradeCIDRs\/1/,
        ],
        [['--set', 'masquerade.nonMasqueradeCIDRs={FD00::/8}'], /\/masquerade\/nonMasqueradeCIDRs\/0/],
        // templates/_masquerade.tpl: what the schema cannot say
        [
          ['--set', 'masquerade.nonMasqueradeCIDRs={10.99.0.1/24}'],
          /masquerade\.nonMasqueradeCIDRs\[0\] "10\.99\.0\.1\/24" has host bits set .*the network is 10\.99\.0\.0\/24/,
        ],
        [
          ['--set', 'masquerade.nonMasqueradeCIDRs={fd00::1/64}'],
          /masquerade\.nonMasqueradeCIDRs\[0\] "fd00::1\/64" has host bits set .*the network is fd00::\/64/,
        ],
      ];
      for (const [args, message] of cases) {
        const r = helm(major, templateArgs(['blockipam', ...args]));
        assert.notEqual(r.status, 0, `${args.join(' ')} was accepted`);
        assert.match(r.stderr, message, args.join(' '));
      }
    });

    test('the packaged chart holds crds/ byte for byte (crds is a link to the one source)', () => {
      const out = mkdtempSync(join(scratch, 'package-'));
      const r = helm(major, ['package', CHART, '--destination', out]);
      assert.equal(r.status, 0, r.stderr);
      const tgz = readdirSync(out).find((f) => f.endsWith('.tgz'));
      assert.ok(tgz, r.stdout);
      const x = spawnSync('tar', ['-xzf', join(out, tgz), '-C', out], { encoding: 'utf8' });
      assert.equal(x.status, 0, x.stderr);
      const source = readdirSync(join(REPO, 'crds')).sort();
      assert.deepEqual(readdirSync(join(out, 'blockipam', 'crds')).sort(), source);
      for (const f of source)
        assert.equal(
          readFileSync(join(out, 'blockipam', 'crds', f), 'utf8'),
          readFileSync(join(REPO, 'crds', f), 'utf8'),
          f,
        );
      const withCrds = render(major, ['blockipam', '--include-crds']);
      assert.equal(withCrds.filter((o) => o.kind === 'CustomResourceDefinition').length, source.length);
    });

    test('the rendered chart passes a server-side dry-run apply on the API server', () => {
      installCrds();
      for (const extra of [[], ['-f', valuesFile(DUAL_STACK)]]) {
        const r = helm(major, templateArgs(['blockipam', ...extra]));
        assert.equal(r.status, 0, r.stderr);
        const apply = kubectl(
          ['apply', '--server-side', '--dry-run=server', '--field-manager=helm', '-f', '-'],
          {
            input: r.stdout,
          },
        );
        assert.equal(apply.status, 0, apply.stderr);
        assert.match(apply.stdout, /daemonset\.apps\/blockipam-agent serverside-applied \(server dry run\)/);
        assert.match(
          apply.stdout,
          /validatingadmissionpolicy\.admissionregistration\.k8s\.io\/blockipam-node-blocks/,
        );
      }
    });
  });
}
