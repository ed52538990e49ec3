/**
 * The JSON Schema of what `release --from-report` relies on in a report (docs/design-cli.md
 * §Report format, §Release safety), validated with ajv — the one JSON Schema library of the
 * project (the plugin's netconf uses it too). Other fields (problems, counts, …) are informational and not
 * checked. The checks run in this order, so the first message is the most telling one: a JSON
 * object, `kind`, `version`, `cluster.kubeSystemUID`, then each `leaked` entry (its `reason` one of
 * the leak kinds). The version covers these fields only: problem kinds come and go without a
 * bump (docs/design-cli.md §Report format), since a bump would make release refuse every report
 * written before it.
 */
import { LEAK_REASONS } from './problems.ts';

export const REPORT_KIND = 'IpamctlCheckReport';
export const REPORT_VERSION = 1;

const object = { type: 'object' } as const;

export const reportSchema = {
  allOf: [
    object,
    { ...object, required: ['kind'], properties: { kind: { const: REPORT_KIND } } },
    { ...object, required: ['version'], properties: { version: { const: REPORT_VERSION } } },
    {
      ...object,
      required: ['cluster'],
      properties: {
        cluster: {
          ...object,
          required: ['kubeSystemUID'],
          properties: { kubeSystemUID: { type: 'string', minLength: 1 } },
        },
      },
    },
    {
      ...object,
      required: ['leaked'],
      properties: {
        leaked: {
          type: 'array',
          items: {
            ...object,
            required: ['address', 'block', 'ordinal', 'handle', 'sequence', 'reason'],
            properties: {
              address: { type: 'string' },
              block: { type: 'string' },
              ordinal: { type: 'integer' },
              handle: { type: 'string' },
              sequence: { type: 'integer' },
              reason: { enum: [...LEAK_REASONS] },
            },
          },
        },
      },
    },
  ],
} as const;
