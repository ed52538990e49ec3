/**
 * JSON Schema of the network configuration blockipam reads on stdin (the whole plugin
 * config that ptp forwards byte for byte). Compiled ahead of time into
 * `netconf-validate.generated.js` by `scripts/build-plugin.ts --codegen` (ajv standalone), so
 * the plugin never compiles a schema at start-up. Only this file is edited by hand.
 *
 * Top-level keys other than these pass through untouched (SPEC §1: unknown fields are the
 * main plugin's); inside `ipam` every key is ours and an unknown one is a typo: rejected.
 */

import { NETWORK_NAME_PATTERN } from './netconf.ts';

const dnsLabel = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$';
const stringList = { type: 'array', items: { type: 'string' } } as const;

const attachments = {
  type: ['array', 'null'],
  items: {
    type: 'object',
    required: ['containerID', 'ifname'],
    properties: { containerID: { type: 'string' }, ifname: { type: 'string' } },
  },
} as const;

const route = {
  type: 'object',
  required: ['dst'],
  additionalProperties: false,
  properties: {
    dst: { type: 'string' },
    gw: { type: 'string' },
    mtu: { type: 'integer', minimum: 0 },
    advmss: { type: 'integer', minimum: 0 },
    priority: { type: 'integer', minimum: 0 },
    table: { type: 'integer', minimum: 0 },
    scope: { type: 'integer', minimum: 0, maximum: 255 },
  },
} as const;

const ipam = {
  type: 'object',
  required: ['type'],
  additionalProperties: false,
  properties: {
    type: { const: 'blockipam' },
    kubeconfig: { type: 'string', pattern: '^/' },
    nodeName: { type: 'string', pattern: dnsLabel },
    logFile: { type: 'string', pattern: '^/' },
    logLevel: { enum: ['error', 'warn', 'info', 'debug'] },
    assignIPv4: { type: 'boolean' },
    assignIPv6: { type: 'boolean' },
    ipv4Pools: { type: 'array', items: { type: 'string', pattern: dnsLabel } },
    ipv6Pools: { type: 'array', items: { type: 'string', pattern: dnsLabel } },
    routes: { type: 'array', maxItems: 1024, items: route },
    dns: {
      type: 'object',
      additionalProperties: false,
      properties: {
        nameservers: stringList,
        domain: { type: 'string' },
        search: stringList,
        options: stringList,
      },
    },
    timeoutMs: { type: 'integer', minimum: 100, maximum: 600000 },
    lockTimeoutMs: { type: 'integer', minimum: 0, maximum: 600000 },
    cacheDir: { type: 'string', pattern: '^/' },
    lockFile: { type: 'string', pattern: '^/' },
    agentSocket: { type: 'string', pattern: '^/' }, // at most 107 bytes: netconf.ts
    mode: { enum: ['agent', 'standalone'] },
    hostLocalStore: { type: 'string', pattern: '^/' },
  },
} as const;

/** The schema; `name` follows the Go skel's network-name rule (SPEC §1). */
export const netconfSchema = {
  $id: 'blockipam-netconf',
  type: 'object',
  required: ['name', 'ipam'],
  properties: {
    cniVersion: { type: 'string' },
    name: { type: 'string', pattern: NETWORK_NAME_PATTERN },
    ipam,
    args: {
      type: 'object',
      properties: { cni: { type: 'object', properties: { ips: stringList } } },
    },
    runtimeConfig: {
      type: 'object',
      properties: {
        ips: stringList,
        'io.kubernetes.cri.pod-annotations': { type: 'object', additionalProperties: { type: 'string' } },
      },
    },
    prevResult: { type: 'object' },
    'cni.dev/valid-attachments': attachments,
    'cni.dev/attachments': attachments,
  },
} as const;
