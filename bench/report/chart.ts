/**
 * The run as an SVG chart, rendered headless by Vega (no canvas needed): median req/s with each
 * round as a tick, and the server's CPU time per request, per scenario and contender. Both axes are
 * logarithmic: the password grant (about 100 req/s, 20 ms of CPU per request, bound by its hash)
 * and the JWKS document (tens of thousands, about 10 µs) belong on one chart.
 */
import * as vega from 'vega';
import { compile, type TopLevelSpec } from 'vega-lite';
import { formatMachine } from '../support/machine.js';
import type { BenchResults } from './results.js';
import { contenderLabel } from './table.js';

interface ChartRow {
  row: string;
  kind: string;
  rps: number;
  us: number | null;
  /** Its new floor, else its old one (report/floors.ts), drawn as a tick on its CPU bar; on Redis the bar is the server's alone. */
  floorUs: number | null;
  round: number | null;
  roundRps: number | null;
}

function rowsOf(results: BenchResults): ChartRow[] {
  const rows: ChartRow[] = [];
  for (const scenario of results.scenarios) {
    for (const contender of scenario.contenders) {
      if (contender.summary === null) continue;
      const row = `${scenario.name} · ${contenderLabel(contender)}`;
      const floor = scenario.floor?.rows.find((r) => r.contender === contender.id);
      rows.push({
        row,
        kind: contender.kind,
        rps: contender.summary.rps,
        us: contender.summary.serverUsPerRequest,
        // The new floor (issue 33) where the row has one, else the old (older files).
        floorUs: floor?.newFloorUs ?? floor?.floorUs ?? null,
        round: null,
        roundRps: null,
      });
      for (const round of contender.rounds.filter((r) => r.valid)) {
        rows.push({
          row,
          kind: contender.kind,
          rps: contender.summary.rps,
          us: null,
          floorUs: null,
          round: round.round,
          roundRps: round.load.rps,
        });
      }
    }
  }
  return rows;
}

export function chartSpec(results: BenchResults): TopLevelSpec {
  const rows = rowsOf(results);
  const order = [...new Set(rows.map((r) => r.row))];
  const y = { field: 'row', type: 'nominal', sort: order, title: null, axis: { labelLimit: 320 } } as const;
  // The baseline in a lighter shade of Tessera's colour: the same server, another checkout. Only
  // in the legend of a run that had one.
  const baseline = rows.some((r) => r.kind === 'baseline');
  const color = {
    field: 'kind',
    type: 'nominal',
    title: null,
    scale: {
      domain: ['tessera', ...(baseline ? ['baseline'] : []), 'peer', 'ceiling'],
      range: ['#2f6fb3', ...(baseline ? ['#8fb5de'] : []), '#d4793a', '#8c8c8c'],
    },
  } as const;
  const summaries = { filter: 'datum.round === null' };
  // Log scales start at a power of ten below the smallest value, so every bar has a length.
  const rpsScale = { type: 'log', domainMin: 10 } as const;
  const usScale = { type: 'log', domainMin: 1 } as const;
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: {
      text: `Tessera bench ${results.startedAt.slice(0, 16).replace('T', ' ')} UTC`,
      subtitle: `${formatMachine(results.machine)} · ${results.settings.loadgen.name}, ${results.settings.connections} connections, ${results.settings.durationS} s`,
    },
    data: { values: rows },
    vconcat: [
      {
        width: 520,
        title: 'requests per second (median; ticks: each round; log scale)',
        layer: [
          {
            transform: [summaries],
            mark: 'bar',
            encoding: { y, x: { field: 'rps', type: 'quantitative', title: 'req/s', scale: rpsScale }, color },
          },
          {
            transform: [summaries],
            mark: { type: 'text', align: 'left', dx: 4 },
            encoding: {
              y,
              x: { field: 'rps', type: 'quantitative', scale: rpsScale },
              text: { field: 'rps', type: 'quantitative', format: ',.0f' },
            },
          },
          {
            transform: [{ filter: 'datum.round !== null' }],
            mark: { type: 'tick', color: 'black', thickness: 2 },
            encoding: { y, x: { field: 'roundRps', type: 'quantitative', scale: rpsScale } },
          },
        ],
      },
      {
        width: 520,
        title:
          'server CPU per request (µs, all threads of the server process; ticks: the floor of its request (the new one since issue 33), which on Redis also counts redis-server; log scale)',
        transform: [summaries, { filter: 'datum.us !== null' }],
        layer: [
          { mark: 'bar', encoding: { y, x: { field: 'us', type: 'quantitative', title: 'µs', scale: usScale }, color } },
          {
            mark: { type: 'text', align: 'left', dx: 4 },
            encoding: {
              y,
              x: { field: 'us', type: 'quantitative', scale: usScale },
              text: { field: 'us', type: 'quantitative', format: ',.1f' },
            },
          },
          {
            transform: [{ filter: 'datum.floorUs !== null' }],
            mark: { type: 'tick', color: 'black', thickness: 2 },
            encoding: { y, x: { field: 'floorUs', type: 'quantitative', scale: usScale } },
          },
        ],
      },
    ],
    config: { font: 'sans-serif' },
  };
}

export async function renderChart(results: BenchResults): Promise<string> {
  const { spec } = compile(chartSpec(results));
  const view = new vega.View(vega.parse(spec), { renderer: 'none' });
  const svg = await view.toSVG();
  view.finalize();
  return svg;
}
