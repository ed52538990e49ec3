/**
 * `ipamctl config set key=value…`: changes IPAMConfig `default` (created when missing) with one
 * compare-and-swap write (a lost race starts over from a fresh GET, at most 5 rounds), after checking each value against the CRD's own ranges (core's
 * SETTING_LIMITS, before any request) and the cross-field rules (core's configProblems, on the
 * stored object; the CRD's CEL rules check them again). `key=` removes a setting (back to its
 * default).
 */
import {
  API_VERSION,
  configProblems,
  DEFAULT_SETTINGS,
  IPAM_CONFIG_NAME,
  isAlreadyExists,
  isConflict,
  SETTING_LIMITS,
  settingsOf,
} from 'blockipam/core';
import type { IPAMConfigObject, IPAMConfigSpec, NumericSetting } from 'blockipam/core';
import { defineCommand, retryOnConflict, withYes } from '../../command.ts';
import type { CommandContext, GlobalFlags } from '../../command.ts';
import { CliError, EXIT, println } from '../../io.ts';

interface SetArgs extends GlobalFlags {
  settings: string[];
}

type Key = keyof IPAMConfigSpec;
const KEYS = Object.keys(DEFAULT_SETTINGS) as Key[];

/**
 * Applies "key=value" assignments to `spec`.
 * @throws CliError for an unknown key, a key given twice, or a bad value (naming the key and,
 *   for a number, the CRD's range)
 */
function applySettings(spec: IPAMConfigSpec, assignments: readonly string[]): IPAMConfigSpec {
  const out: Record<string, unknown> = { ...spec };
  const given = new Map<Key, string>();
  for (const text of assignments) {
    const eq = text.indexOf('=');
    const key = text.slice(0, eq) as Key;
    if (eq < 0 || !KEYS.includes(key))
      throw new CliError(`${JSON.stringify(text)}: want KEY=VALUE with KEY one of ${KEYS.join(', ')}`);
    const first = given.get(key);
    if (first !== undefined)
      throw new CliError(
        `${key} is given twice (${first}, ${text}): give each setting once. Nothing was changed.`,
      );
    given.set(key, text);
    const value = text.slice(eq + 1);
    if (value === '') delete out[key];
    else if (typeof DEFAULT_SETTINGS[key] === 'boolean') {
      if (value !== 'true' && value !== 'false')
        throw new CliError(`${key} must be true or false, not ${JSON.stringify(value)}`);
      out[key] = value === 'true';
    } else {
      const { min, max } = SETTING_LIMITS[key as NumericSetting];
      const n = Number(value);
      if (!/^(0|[1-9][0-9]*)$/.test(value) || n < min || n > max)
        throw new CliError(
          `${key} must be a whole number from ${min} to ${max} (IPAMConfig spec.${key}), not ${JSON.stringify(value)}. Nothing was changed.`,
        );
      out[key] = n;
    }
  }
  return out;
}

export function configSetCommand(ctx: CommandContext) {
  return defineCommand<SetArgs>({
    ctx,
    command: 'set <settings..>',
    describe: 'Change IPAM settings (KEY=VALUE …; KEY= restores the default)',
    builder: (y) =>
      withYes(y, false)
        .positional('settings', {
          type: 'string',
          array: true,
          demandOption: true,
          describe: `KEY=VALUE, KEY one of ${KEYS.join(', ')}`,
        })
        .example(
          '$0 config set strictAffinity=true maxBlocksPerNode=4',
          'No borrowing; at most 4 blocks per node',
        )
        .example('$0 config set ipCooldownSeconds=', 'Back to the default cooldown'),
    prepare: (args) => applySettings({}, args.settings), // every value checked before any request
    run: async (args, { ds }) => {
      // A write that loses the compare-and-swap to another writer (409, or the create of a
      // config someone else just created) starts over from a fresh GET, as pool delete does:
      // the settings are applied to what is stored then and the rules checked again.
      await retryOnConflict(
        async () => {
          const stored = await ds.configs.get(IPAM_CONFIG_NAME);
          const spec = applySettings(stored?.spec ?? {}, args.settings);
          const problems = configProblems(settingsOf({ metadata: { name: IPAM_CONFIG_NAME }, spec }));
          if (problems.length > 0)
            throw new CliError(`refused: ${problems.join('; ')}. Nothing was changed.`);
          const metadata = stored?.metadata ?? { name: IPAM_CONFIG_NAME };
          const object: IPAMConfigObject = { apiVersion: API_VERSION, kind: 'IPAMConfig', metadata, spec };
          await (stored ? ds.configs.update(object) : ds.configs.create(object));
        },
        (error) => isConflict(error) || isAlreadyExists(error),
      );
      println(ctx.io.stdout, `IPAMConfig ${IPAM_CONFIG_NAME} updated: ${args.settings.join(' ')}`);
      return EXIT.OK;
    },
  });
}
