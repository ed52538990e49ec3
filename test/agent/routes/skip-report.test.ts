// Skipped routes made visible: the loop logs a group of skips (node, reason, family, blocks) when
// it appears or changes and once when it goes away — never again on an unchanged pass — and the
// gauge blockipam_agent_routes_skipped{node,family,reason} holds the current counts (0 once resolved).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createAgentMetrics, setRouteSkips } from '../../../block-controller/agent/metrics.ts';
import {
  MAX_LISTED,
  planRoutes,
  RouteProgrammer,
  SkipReporter,
  skipCounts,
  skipLine,
} from '../../../block-controller/agent/routes/index.ts';
import type {
  InstalledRoute,
  RouteChange,
  RouteTable,
  RouteView,
  SkippedRoute,
} from '../../../block-controller/agent/routes/index.ts';
import { block, node, pools, routeView } from './fixtures.ts';

class NullTable implements RouteTable {
  list(): Promise<InstalledRoute[]> {
    return Promise.resolve([]);
  }
  others(): Promise<InstalledRoute[]> {
    return Promise.resolve([]);
  }
  apply(_changes: readonly RouteChange[]): Promise<{ change: RouteChange; error: string }[]> {
    return Promise.resolve([]);
  }
}

/** Node b holds an IPv4 and an IPv6 block; `bIPv6` gives it an IPv6 InternalIP. */
const cluster = (bIPv6: boolean, extraV6 = false): RouteView =>
  routeView(
    {
      blocks: [
        block('10.0.0.64/26', 'b'),
        block('fd00::40/122', 'b'),
        ...(extraV6 ? [block('fd00::80/122', 'b')] : []),
      ],
      nodes: [node('a', '192.0.2.11', 'fd0f::11'), node('b', '192.0.2.12', ...(bIPv6 ? ['fd0f::12'] : []))],
      pools: pools('10.0.0.0/16', 'fd00::/64'),
    },
    'a',
  );

const skippedOf = (view: RouteView): readonly SkippedRoute[] => {
  const plan = planRoutes(view, { nodeName: 'a' });
  assert.ok(plan.ready);
  return plan.skipped;
};

void describe('skipped routes', () => {
  void it('a node without an IPv6 InternalIP: one line naming it, the family and the block', () => {
    const reporter = new SkipReporter();
    const first = reporter.changes(skippedOf(cluster(false)));
    assert.equal(first.appeared.length, 1);
    assert.deepEqual(first.resolved, []);
    const { message, fields } = skipLine(first.appeared[0]!);
    assert.match(
      message,
      /^routes skipped: node b has no IPv6 InternalIP .* give the node an IPv6 InternalIP/,
    );
    assert.deepEqual(fields, {
      routeNode: 'b',
      reason: 'no-internal-ip',
      family: 'IPv6',
      routes: 1,
      blocks: 'fd00--40-122',
    });
    // an unchanged pass says nothing; a second skipped block of the group says it again
    assert.deepEqual(reporter.changes(skippedOf(cluster(false))), { appeared: [], resolved: [] });
    const grown = reporter.changes(skippedOf(cluster(false, true)));
    assert.deepEqual(
      grown.appeared.map((g) => g.blocks),
      [['fd00--40-122', 'fd00--80-122']],
    );
    // the node gets its IPv6 address: resolved, once
    const fixed = reporter.changes(skippedOf(cluster(true, true)));
    assert.deepEqual(fixed.appeared, []);
    assert.deepEqual(
      fixed.resolved.map((g) => [g.node, g.family, g.reason]),
      [['b', 6, 'no-internal-ip']],
    );
    assert.deepEqual(reporter.changes(skippedOf(cluster(true, true))), { appeared: [], resolved: [] });
  });

  void it('a long group lists MAX_LISTED blocks and counts the rest', () => {
    const skipped = Array.from({ length: MAX_LISTED + 5 }, (_, i) => ({
      block: `fd00--${i}-122`,
      dst: `fd00::${i * 64}/122`,
      node: 'b',
      why: 'no-internal-ip' as const,
    }));
    const [group] = new SkipReporter().changes(skipped).appeared;
    assert.match(String(skipLine(group!).fields.blocks), / and 5 more$/);
  });

  void it('the loop logs a skip when it appears and when it goes, not on every pass', async () => {
    const warnings: string[] = [];
    const infos: string[] = [];
    const log = {
      info: (m: string) => infos.push(m),
      warn: (m: string, meta?: Record<string, unknown>) => warnings.push(`${m} ${JSON.stringify(meta)}`),
    };
    const loop = new RouteProgrammer({ nodeName: 'a', table: new NullTable(), log });
    try {
      for (let i = 0; i < 3; i++) {
        loop.update(cluster(false));
        await loop.flush();
      }
      assert.equal(warnings.length, 1, warnings.join('\n'));
      assert.match(warnings[0]!, /node b has no IPv6 InternalIP.*"blocks":"fd00--40-122"/);
      loop.update(cluster(true));
      await loop.flush();
      assert.ok(infos.includes('routes no longer skipped'), infos.join('\n'));
      assert.equal(warnings.length, 1);
    } finally {
      await loop.stop();
    }
  });

  void it('the gauge: counts by family and reason, 0 once resolved', async () => {
    const metrics = createAgentMetrics();
    const value = async (): Promise<string> =>
      (await metrics.registry.metrics())
        .split('\n')
        .filter((l) => l.startsWith('blockipam_agent_routes_skipped{'))
        .join('\n');
    setRouteSkips(metrics, 'a', skipCounts(skippedOf(cluster(false, true))));
    assert.equal(
      await value(),
      'blockipam_agent_routes_skipped{node="a",family="6",reason="no-internal-ip",component="agent"} 2',
    );
    setRouteSkips(metrics, 'a', skipCounts(skippedOf(cluster(true, true))));
    assert.equal(
      await value(),
      'blockipam_agent_routes_skipped{node="a",family="6",reason="no-internal-ip",component="agent"} 0',
    );
  });
});
