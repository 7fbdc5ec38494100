/**
 * Line charts as standalone SVG text (no chart library, no DOM): axes with rounded ticks,
 * optional log axes, one polyline per series, a legend, and point markers whose `<title>`
 * shows the values on hover. The CLI writes them to files (`--svg DIR`); the page inserts the
 * same text. Null y values break a line.
 */

/** Distinct colours for policies and ranks. */
export const PALETTE = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf', '#7f7f7f', '#bcbd22'];

export interface Series { label: string; color: string; points: readonly (readonly [number, number | null])[] }

export interface ChartOptions {
  title: string;
  xLabel: string;
  yLabel: string;
  series: readonly Series[];
  xLog?: boolean;
  yLog?: boolean;
  yMin?: number;
  yMax?: number;
  yFormat?: (v: number) => string;
  xFormat?: (v: number) => string;
  width?: number;
  height?: number;
  /** Hover markers on at most this many points per series (default 200; 0 = none). */
  markers?: number;
}

/** The chart styles, inside every SVG so a file renders alone. */
const STYLE = '.chart{background:#fff;font-family:system-ui,sans-serif}.chart-title{font-weight:600;font-size:13px}'
  + '.tick{font-size:10px;fill:#444}.label{font-size:11px;fill:#222}.grid{stroke:#eee}.axis{stroke:#888}'
  + '.series{fill:none;stroke-width:1.6}.marker{fill-opacity:0;stroke:none}.marker:hover{fill-opacity:1}';

const esc = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
const f1 = (v: number): string => v.toFixed(1);

function tag(name: string, attrs: Record<string, string | number>, body = ''): string {
  const a = Object.entries(attrs).map(([k, v]) => ` ${k}="${typeof v === 'number' ? f1(v) : esc(v)}"`).join('');
  return body === '' ? `<${name}${a}/>` : `<${name}${a}>${body}</${name}>`;
}

/** About `n` round tick values covering [lo, hi]. */
export function ticks(lo: number, hi: number, n = 5): number[] {
  if (!(hi > lo)) return [lo];
  const raw = (hi - lo) / n;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? 10 * mag;
  const out: number[] = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Number(v.toPrecision(12)));
  return out;
}

/** Tick values of a log axis over [lo, hi] (data units): powers of ten, or 1-2-5 steps when the range is short. */
function logTicks(lo: number, hi: number): number[] {
  const a = Math.floor(Math.log10(lo)), b = Math.ceil(Math.log10(hi));
  const mult = b - a <= 2 ? [1, 2, 5] : [1];
  const out: number[] = [];
  for (let e = a; e <= b; e++) for (const m of mult) { const v = m * 10 ** e; if (v >= lo * 0.999 && v <= hi * 1.001) out.push(Number(v.toPrecision(12))); }
  return out.length > 0 ? out : [lo];
}

/** An SVG line chart, as text. */
export function lineChartSvg(o: ChartOptions): string {
  const W = o.width ?? 560, H = o.height ?? 300;
  // legend items flow left to right and wrap; the bottom margin grows with its rows
  const legend: { s: Series; x: number; row: number }[] = [];
  let lx = 0, row = 0;
  for (const s of o.series) {
    const w = 24 + s.label.length * 6.2;
    if (lx > 0 && 58 + lx + w > W - 12) { lx = 0; row++; }
    legend.push({ s, x: 58 + lx, row });
    lx += w;
  }
  const m = { l: 58, r: 22, t: 28, b: 50 + 14 * (row + 1) };
  const fx = o.xLog ? (v: number) => Math.log10(Math.max(v, 1e-9)) : (v: number) => v;
  const fy = o.yLog ? (v: number) => Math.log10(Math.max(v, 1e-9)) : (v: number) => v;
  const xs: number[] = [], ys: number[] = [];
  for (const s of o.series) for (const [x, y] of s.points) { xs.push(x); if (y !== null && (!o.yLog || y > 0)) ys.push(y); }
  const xlo = Math.min(...xs, Infinity), xhi = Math.max(...xs, -Infinity);
  const ylo = o.yMin ?? (o.yLog ? Math.min(...ys, Infinity) : Math.min(0, ...ys));
  const yhi = o.yMax ?? (o.yLog ? Math.max(...ys, -Infinity) : Math.max(1e-9, ...ys) * 1.05);
  const [x0, x1] = [fx(xlo), fx(xhi)], [y0, y1] = [fy(ylo), fy(yhi)];
  const px = (x: number): number => m.l + ((fx(x) - x0) / (x1 - x0 || 1)) * (W - m.l - m.r);
  const py = (y: number): number => H - m.b - ((fy(y) - y0) / (y1 - y0 || 1)) * (H - m.t - m.b);
  const parts: string[] = [`<style>${STYLE}</style>`, tag('rect', { x: 0, y: 0, width: W, height: H, fill: '#fff' })];
  parts.push(tag('text', { x: W / 2, y: 16, 'text-anchor': 'middle', class: 'chart-title' }, esc(o.title)));
  const yf = o.yFormat ?? ((v: number) => String(v)), xf = o.xFormat ?? ((v: number) => String(v));
  const finite = Number.isFinite(ylo) && Number.isFinite(yhi);
  for (const v of !finite ? [] : o.yLog ? logTicks(ylo, yhi) : ticks(ylo, yhi)) {
    parts.push(tag('line', { x1: m.l, x2: W - m.r, y1: py(v), y2: py(v), class: 'grid' }));
    parts.push(tag('text', { x: m.l - 6, y: py(v) + 4, 'text-anchor': 'end', class: 'tick' }, esc(yf(v))));
  }
  const xt = !Number.isFinite(xlo) ? [] : o.xLog ? logTicks(xlo, xhi) : ticks(xlo, xhi);
  for (const v of xt) {
    parts.push(tag('line', { x1: px(v), x2: px(v), y1: H - m.b, y2: H - m.b + 4, class: 'axis' }));
    parts.push(tag('text', { x: px(v), y: H - m.b + 16, 'text-anchor': 'middle', class: 'tick' }, esc(xf(v))));
  }
  parts.push(tag('line', { x1: m.l, x2: W - m.r, y1: H - m.b, y2: H - m.b, class: 'axis' }));
  parts.push(tag('line', { x1: m.l, x2: m.l, y1: m.t, y2: H - m.b, class: 'axis' }));
  parts.push(tag('text', { x: (m.l + W - m.r) / 2, y: H - m.b + 32, 'text-anchor': 'middle', class: 'label' }, esc(o.xLabel)));
  const ym = (m.t + H - m.b) / 2;
  parts.push(tag('text', { x: 12, y: ym, 'text-anchor': 'middle', class: 'label', transform: `rotate(-90 12 ${f1(ym)})` }, esc(o.yLabel)));
  const maxMarkers = o.markers ?? 200;
  for (const s of o.series) {
    let d = '';
    let pen = false;
    const drawn: (readonly [number, number])[] = [];
    for (const [x, y] of s.points) {
      if (y === null || (o.yLog && !(y > 0))) { pen = false; continue; }
      d += `${pen ? 'L' : 'M'}${f1(px(x))},${f1(py(y))}`;
      pen = true;
      drawn.push([x, y]);
    }
    parts.push(tag('path', { d, stroke: s.color, class: 'series', 'data-series': s.label }));
    if (maxMarkers > 0 && drawn.length > 0) {
      const every = Math.ceil(drawn.length / maxMarkers);
      const g = drawn.filter((_, i) => i % every === 0).map(([x, y]) =>
        tag('circle', { cx: px(x), cy: py(y), r: 3.5, fill: s.color, class: 'marker' }, `<title>${esc(`${s.label}: ${xf(x)}, ${yf(y)}`)}</title>`));
      parts.push(`<g data-markers="${esc(s.label)}">${g.join('')}</g>`);
    }
  }
  for (const { s, x, row: r } of legend) {
    const y = H - m.b + 44 + 14 * r;
    parts.push(`<g class="legend">${tag('rect', { x, y: y - 9, width: 10, height: 10, fill: s.color })}${tag('text', { x: x + 14, y, class: 'tick' }, esc(s.label))}</g>`);
  }
  return `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" class="chart" role="img" aria-label="${esc(o.title)}">${parts.join('')}</svg>`;
}
