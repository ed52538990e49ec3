/**
 * What every command gets from the dispatcher. A command validates its input, builds the node
 * IPAM call (core/node-ipam/service-types.ts) and formats the outcome; the client it calls
 * decides where the call runs — the node agent, or the direct path under the host lock
 * (docs/design-plugin.md §Forwarder).
 */
import type { AttachmentRef } from '../../node-ipam/service-types.ts';
import type { IpamClient } from '../client.ts';
import type { InvocationEnv } from '../env.ts';
import type { Logger } from '../log.ts';
import type { NetConf } from '../netconf.ts';

export interface CommandContext {
  readonly env: InvocationEnv;
  readonly conf: NetConf;
  readonly log: Logger;
  /**
   * The node IPAM client, created on first use (once per invocation): connected to the agent's
   * socket, or the direct path.
   */
  ipam(): Promise<IpamClient>;
}

/** A command's output: the document for stdout (ADD), or undefined (nothing on stdout). */
export type CommandResult = Record<string, unknown> | undefined;
export type Command = (ctx: CommandContext) => Promise<CommandResult>;

/** This invocation's attachment (ADD, DEL, CHECK). */
export function attachmentOf(ctx: CommandContext): AttachmentRef {
  return { network: ctx.conf.name, containerID: ctx.env.containerID, ifname: ctx.env.ifname };
}
