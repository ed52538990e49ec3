/** `ipamctl config get`: the effective IPAM settings (IPAMConfig `default` with defaults filled in). */
import { DEFAULT_SETTINGS, IPAM_CONFIG_NAME, settingsOf } from 'blockipam/core';
import type { IPAMConfigSpec } from 'blockipam/core';
import { defineCommand, withFormat } from '../../command.ts';
import type { CommandContext, GlobalFlags } from '../../command.ts';
import { EXIT } from '../../io.ts';
import { print } from '../../output.ts';
import type { Format } from '../../output.ts';

interface GetArgs extends GlobalFlags {
  output: Format;
}

export function configGetCommand(ctx: CommandContext) {
  return defineCommand<GetArgs>({
    ctx,
    command: 'get',
    describe: 'Show the effective IPAM settings and which are set',
    builder: (y) =>
      withFormat(y)
        .example('$0 config get', 'PROPERTY / VALUE / SOURCE')
        .example('$0 config get -o json', 'Stored spec and effective settings'),
    run: async (args, { ds }) => {
      const stored = await ds.configs.get(IPAM_CONFIG_NAME);
      const spec: IPAMConfigSpec = stored?.spec ?? {};
      const effective = settingsOf(stored);
      print(
        ctx.io.stdout,
        args.output,
        { name: IPAM_CONFIG_NAME, exists: stored !== undefined, spec, effective },
        () => ({
          headers: ['PROPERTY', 'VALUE', 'SOURCE'],
          rows: (Object.keys(DEFAULT_SETTINGS) as (keyof typeof DEFAULT_SETTINGS)[]).map((key) => [
            key,
            effective[key],
            key in spec ? 'set' : 'default',
          ]),
        }),
      );
      return EXIT.OK;
    },
  });
}
