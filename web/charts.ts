/**
 * Line charts in plain SVG (no chart library): axes with rounded ticks, optional log x axis,
 * one polyline per series, a legend. Gaps (null y) break a line.
 */

const NS = 'http://www.w3.org/2000/svg';

/** Distinct colours for policies and ranks. */
export const PALETTE = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf', '#7f7f7f', '#bcbd22'];

export interface Series { label: string; color: string; points: readonly (readonly [number, number | null])[] }

export interface ChartOptions {
  title: string;
  xLabel: string;
  yLabel: string;
  series: readonly Series[];
  xLog?: boolean;
  yMin?: number;
  yMax?: number;
  yFormat?: (v: number) => string;
  xFormat?: (v: number) => string;
  width?: number;
  height?: number;
}

function el<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Record<string, string | number>, text?: string): SVGElementTagNameMap[K] {
  const e = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
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

/** An SVG line chart. */
export function lineChart(o: ChartOptions): SVGSVGElement {
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
  const xs: number[] = [], ys: number[] = [];
  for (const s of o.series) for (const [x, y] of s.points) { xs.push(fx(x)); if (y !== null) ys.push(y); }
  const x0 = Math.min(...xs, Infinity), x1 = Math.max(...xs, -Infinity);
  const y0 = o.yMin ?? Math.min(0, ...ys), y1 = o.yMax ?? Math.max(1e-9, ...ys) * 1.05;
  const px = (x: number): number => m.l + ((fx(x) - x0) / (x1 - x0 || 1)) * (W - m.l - m.r);
  const py = (y: number): number => H - m.b - ((y - y0) / (y1 - y0 || 1)) * (H - m.t - m.b);
  const svg = el('svg', { viewBox: `0 0 ${W} ${H}`, width: W, height: H, class: 'chart', role: 'img', 'aria-label': o.title });
  svg.append(el('text', { x: W / 2, y: 16, 'text-anchor': 'middle', class: 'chart-title' }, o.title));
  const yf = o.yFormat ?? ((v: number) => String(v));
  for (const v of ticks(y0, y1)) {
    svg.append(el('line', { x1: m.l, x2: W - m.r, y1: py(v), y2: py(v), class: 'grid' }));
    svg.append(el('text', { x: m.l - 6, y: py(v) + 4, 'text-anchor': 'end', class: 'tick' }, yf(v)));
  }
  const xf = o.xFormat ?? ((v: number) => String(v));
  const xt = o.xLog ? ticks(Math.ceil(x0), Math.floor(x1), Math.min(6, Math.floor(x1) - Math.ceil(x0))).map((e) => 10 ** e) : ticks(x0, x1);
  for (const v of xt) {
    svg.append(el('line', { x1: px(v), x2: px(v), y1: H - m.b, y2: H - m.b + 4, class: 'axis' }));
    svg.append(el('text', { x: px(v), y: H - m.b + 16, 'text-anchor': 'middle', class: 'tick' }, xf(v)));
  }
  svg.append(el('line', { x1: m.l, x2: W - m.r, y1: H - m.b, y2: H - m.b, class: 'axis' }));
  svg.append(el('line', { x1: m.l, x2: m.l, y1: m.t, y2: H - m.b, class: 'axis' }));
  svg.append(el('text', { x: (m.l + W - m.r) / 2, y: H - m.b + 32, 'text-anchor': 'middle', class: 'label' }, o.xLabel));
  svg.append(el('text', { x: 12, y: (m.t + H - m.b) / 2, 'text-anchor': 'middle', class: 'label', transform: `rotate(-90 12 ${(m.t + H - m.b) / 2})` }, o.yLabel));
  for (const s of o.series) {
    let d = '';
    let pen = false;
    for (const [x, y] of s.points) {
      if (y === null) { pen = false; continue; }
      d += `${pen ? 'L' : 'M'}${px(x).toFixed(1)},${py(y).toFixed(1)}`;
      pen = true;
    }
    svg.append(el('path', { d, stroke: s.color, class: 'series', 'data-series': s.label }));
  }
  for (const { s, x, row: r } of legend) {
    const y = H - m.b + 44 + 14 * r;
    const g = el('g', { class: 'legend' });
    g.append(el('rect', { x, y: y - 9, width: 10, height: 10, fill: s.color }));
    g.append(el('text', { x: x + 14, y, class: 'tick' }, s.label));
    svg.append(g);
  }
  return svg;
}
