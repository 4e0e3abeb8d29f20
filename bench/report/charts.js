// gradwire-bench report: draws the line charts (and stacked bars) of the JSON in the page's script element
// "chart-data" as inline SVG. Embedded into every report page (bench/report/html_page.cpp); loads
// nothing.
//
// Data: {"title": ..., "charts": [{"title", "subtitle", "x_label", "y_label", "x_unit",
// "y_unit", "x_scale": "linear" | "log2", "x_values": [...], "series": [{"name", "group",
// "dashed", "points": [{"x", "y", "note"?}]}], "baselines": [{"name", "group", "y"}]}]}
// (bench/report/charts.h). Series and baselines of one group share a colour. A chart with
// "kind": "stacked_bars" (a trace's per-rank summary) draws one bar per entry of its "categories"
// (the bar's label; a point's x is its index) with one segment per series, stacked in order.
//
// When done it sets on <body> data-charts-drawn and data-points-drawn (the charts and point
// markers drawn so far); on any error it also sets data-chart-error and shows #chart-error.
// This file must never contain a closing script tag or an HTML comment opener.
(function() {
'use strict';

const SVG_NS = 'http://www.w3.org/2000/svg';
const WIDTH = 760;
const PLOT = {
  left: 70,
  right: 20,
  top: 16,
  height: 300
};
const AXIS_SPACE = 52;  // below the plot: tick labels and the x label
const LEGEND_ROW = 20;
const CHAR_WIDTH = 6.8;  // estimated width of a 12px character, for laying out the legend
const PALETTE = [
  '#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf', '#7f7f7f',
  '#bcbd22'
];
const MAX_LISTED_TICKS = 12;  // more x values than this: evenly spaced ticks instead
// Markers: a secondary (dashed) series' ring is drawn first and larger, so that a main point
// at the same place shows as a dot inside it.
const MAIN_RADIUS = 3.5;
const SECONDARY_RADIUS = 5.5;

const counts = {
  charts: 0,
  points: 0
};

function element(tag, attributes, parent, text) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const name of Object.keys(attributes)) node.setAttribute(name, String(attributes[name]));
  if (text !== undefined) node.textContent = text;
  if (parent) parent.appendChild(node);
  return node;
}

function htmlElement(tag, className, parent, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  parent.appendChild(node);
  return node;
}

// Tooltip numbers: four significant digits.
function formatValue(value) {
  if (value === 0) return '0';
  const magnitude = Math.abs(value);
  if (magnitude >= 1e6 || magnitude < 1e-4) return value.toExponential(3);
  return String(Number(value.toPrecision(4)));
}

// 1, 2 or 5 times a power of ten, so that `span` holds about `count` steps.
function niceStep(span, count) {
  const raw = span / count;
  const power = Math.pow(10, Math.floor(Math.log10(raw)));
  const mantissa = raw / power;
  return (mantissa > 5 ? 10 : mantissa > 2 ? 5 : mantissa > 1 ? 2 : 1) * power;
}

function decimalsFor(step) {
  return Math.max(0, -Math.floor(Math.log10(step) + 1e-9));
}

// From 0 to a round value above the largest y; ticks at round steps.
function yAxis(largest) {
  const top = largest > 0 ? largest : 1;
  const step = niceStep(top, 5);
  const steps = Math.max(1, Math.ceil(top * 1.04 / step - 1e-9));
  const decimals = decimalsFor(step);
  const ticks = [];
  for (let i = 0; i <= steps; ++i)
    ticks.push({value: i * step, label: (i * step).toFixed(decimals)});
  return {max: steps * step, ticks: ticks, fraction: (y) => y / (steps * step)};
}

// Linear or log2 over the x values, with a margin so that end points clear the axes.
function xAxis(chart) {
  const values = chart.x_values.length > 0 ? chart.x_values.slice() : [1];
  const log = chart.x_scale === 'log2' && values[0] > 0;
  const transform = log ? Math.log2 : (x) => x;
  let low = transform(values[0]);
  let high = transform(values[values.length - 1]);
  if (low === high) {
    low -= 1;
    high += 1;
  } else {
    const pad = (high - low) * 0.06;
    low -= pad;
    high += pad;
  }
  let ticks = values;
  if (values.length > MAX_LISTED_TICKS) {
    ticks = [];
    if (log) {
      for (let e = Math.ceil(low); e <= Math.floor(high); ++e) ticks.push(Math.pow(2, e));
    } else {
      const step = niceStep(high - low, 8);
      for (let v = Math.ceil(low / step) * step; v <= high; v += step) ticks.push(v);
    }
  }
  return {ticks: ticks, fraction: (x) => (transform(x) - low) / (high - low)};
}

function colorsOf(chart) {
  const colors = new Map();
  for (const item of chart.series.concat(chart.baselines)) {
    if (!colors.has(item.group)) colors.set(item.group, PALETTE[colors.size % PALETTE.length]);
  }
  return colors;
}

function finite(value) {
  return typeof value === 'number' && isFinite(value);
}

function largestY(chart) {
  let largest = 0;
  for (const series of chart.series) {
    for (const point of series.points)
      if (finite(point.y)) largest = Math.max(largest, point.y);
  }
  for (const baseline of chart.baselines)
    if (finite(baseline.y)) largest = Math.max(largest, baseline.y);
  return largest;
}

// Legend entries in rows below the plot; returns the rows' total height.
function layoutLegend(entries) {
  let x = PLOT.left;
  let row = 0;
  for (const entry of entries) {
    const width = 40 + entry.name.length * CHAR_WIDTH + 18;
    if (x + width > WIDTH && x > PLOT.left) {
      x = PLOT.left;
      row += 1;
    }
    entry.x = x;
    entry.row = row;
    x += width;
  }
  return entries.length > 0 ? (row + 1) * LEGEND_ROW : 0;
}

function drawAxes(root, chart, plot, x, y) {
  const grid = element('g', {class: 'grid'}, root);
  const axis = element('g', {class: 'axis'}, root);
  const bottom = plot.top + plot.height;
  for (const tick of y.ticks) {
    const py = bottom - y.fraction(tick.value) * plot.height;
    element('line', {x1: plot.left, x2: plot.left + plot.width, y1: py, y2: py}, grid);
    element('line', {x1: plot.left - 5, x2: plot.left, y1: py, y2: py}, axis);
    element('text', {x: plot.left - 8, y: py + 4, 'text-anchor': 'end'}, axis, tick.label);
  }
  for (const value of x.ticks) {
    const px = plot.left + x.fraction(value) * plot.width;
    element('line', {x1: px, x2: px, y1: plot.top, y2: bottom}, grid);
    element('line', {x1: px, x2: px, y1: bottom, y2: bottom + 5}, axis);
    element('text', {x: px, y: bottom + 18, 'text-anchor': 'middle'}, axis, formatValue(value));
  }
  element('line', {x1: plot.left, x2: plot.left + plot.width, y1: bottom, y2: bottom}, axis);
  element('line', {x1: plot.left, x2: plot.left, y1: plot.top, y2: bottom}, axis);
  element(
      'text',
      {x: plot.left + plot.width / 2, y: bottom + 40, 'text-anchor': 'middle', class: 'x-label'},
      axis, chart.x_label);
  const middle = plot.top + plot.height / 2;
  element(
      'text', {
        x: 16,
        y: middle,
        'text-anchor': 'middle',
        class: 'y-label',
        transform: 'rotate(-90 16 ' + middle + ')'
      },
      axis, chart.y_label);
}

function drawSeries(root, chart, series, color, place) {
  const points = series.points.filter((point) => finite(point.x) && finite(point.y));
  const group = element('g', {class: 'series'}, root);
  if (points.length > 1) {
    const path =
        points.map((point, i) => (i === 0 ? 'M' : 'L') + place(point.x, point.y).join(' '));
    const line =
        element('path', {d: path.join(' '), fill: 'none', stroke: color, 'stroke-width': 2}, group);
    if (series.dashed) line.setAttribute('stroke-dasharray', '6 4');
  }
  for (const point of points) {
    const [px, py] = place(point.x, point.y);
    const marker = element(
        'circle', {
          cx: px,
          cy: py,
          r: series.dashed ? SECONDARY_RADIUS : MAIN_RADIUS,
          stroke: color,
          'stroke-width': 1.5,
          fill: series.dashed ? '#fff' : color
        },
        group);
    const note = point.note ? ' (' + point.note + ')' : '';
    element(
        'title', {}, marker,
        series.name + ' at ' + formatValue(point.x) + ' ' + chart.x_unit + ': ' +
            formatValue(point.y) + ' ' + chart.y_unit + note);
    counts.points += 1;
  }
}

function drawBaseline(root, chart, baseline, color, plot, y) {
  if (!finite(baseline.y)) return;
  const py = plot.top + plot.height - y.fraction(baseline.y) * plot.height;
  const line = element(
      'line', {
        x1: plot.left,
        x2: plot.left + plot.width,
        y1: py,
        y2: py,
        stroke: color,
        'stroke-width': 2,
        'stroke-dasharray': '2 4',
        class: 'baseline'
      },
      root);
  element('title', {}, line, baseline.name + ': ' + formatValue(baseline.y) + ' ' + chart.y_unit);
}

function drawLegend(root, entries, top) {
  const legend = element('g', {class: 'legend'}, root);
  for (const entry of entries) {
    const cy = top + entry.row * LEGEND_ROW + LEGEND_ROW / 2;
    const sample = element(
        'line',
        {x1: entry.x, x2: entry.x + 30, y1: cy, y2: cy, stroke: entry.color, 'stroke-width': 2},
        legend);
    if (entry.baseline) {
      sample.setAttribute('stroke-dasharray', '2 4');
    } else {
      if (entry.dashed) sample.setAttribute('stroke-dasharray', '6 4');
      element(
          'circle', {
            cx: entry.x + 15,
            cy: cy,
            r: entry.dashed ? SECONDARY_RADIUS : MAIN_RADIUS,
            stroke: entry.color,
            'stroke-width': 1.5,
            fill: entry.dashed ? '#fff' : entry.color
          },
          legend);
    }
    element('text', {x: entry.x + 38, y: cy + 4}, legend, entry.name);
  }
}

// One bar per category, one segment per series (y values stacked from 0 in series order).
function drawStackedBars(chart, root, plot, legendTop, entries, colors) {
  const bars = chart.categories.length;
  const totals = new Array(bars).fill(0);
  for (const series of chart.series) {
    for (const point of series.points)
      if (finite(point.y) && point.x >= 0 && point.x < bars) totals[point.x] += point.y;
  }
  const y = yAxis(Math.max(0, ...totals));
  const slot = plot.width / Math.max(1, bars);
  drawAxes(root, chart, plot, {ticks: [], fraction: () => 0}, y);
  const bottom = plot.top + plot.height;
  chart.categories.forEach((label, i) => {
    element(
        'text', {x: plot.left + slot * (i + 0.5), y: bottom + 18, 'text-anchor': 'middle'}, root,
        label);
  });
  const stacked = new Array(bars).fill(0);
  for (const series of chart.series) {
    const group = element('g', {class: 'series'}, root);
    for (const point of series.points) {
      if (!finite(point.y) || point.y <= 0 || !(point.x >= 0 && point.x < bars)) continue;
      const low = stacked[point.x];
      stacked[point.x] += point.y;
      const top = bottom - y.fraction(stacked[point.x]) * plot.height;
      const rect = element(
          'rect', {
            x: plot.left + slot * point.x + slot * 0.2,
            y: top,
            width: slot * 0.6,
            height: Math.max(0.5, y.fraction(point.y) * plot.height),
            fill: colors.get(series.group),
            class: 'bar'
          },
          group);
      const note = point.note ? ' (' + point.note + ')' : '';
      element(
          'title', {}, rect,
          chart.categories[point.x] + ', ' + series.name + ': ' + formatValue(point.y) + ' ' +
              chart.y_unit + note);
      counts.points += 1;
    }
  }
  drawLegend(root, entries, legendTop);
  counts.charts += 1;
}

function drawChart(chart, index, container) {
  if (!Array.isArray(chart.series) || !Array.isArray(chart.baselines) ||
      !Array.isArray(chart.x_values)) {
    throw new Error('chart ' + (index + 1) + ' has no series, baselines or x_values list');
  }
  const figure = htmlElement('figure', 'chart', container);
  figure.id = 'chart-' + (index + 1);
  htmlElement('h2', '', figure, chart.title);
  if (chart.subtitle) htmlElement('p', 'subtitle', figure, chart.subtitle);

  const colors = colorsOf(chart);
  const entries =
      chart.series.map((s) => ({name: s.name, color: colors.get(s.group), dashed: s.dashed}))
          .concat(chart.baselines.map(
              (b) => ({name: b.name, color: colors.get(b.group), baseline: true})));
  const legendTop = PLOT.top + PLOT.height + AXIS_SPACE;
  const height = legendTop + layoutLegend(entries) + 6;
  const plot =
      {left: PLOT.left, top: PLOT.top, height: PLOT.height, width: WIDTH - PLOT.left - PLOT.right};
  const root = element(
      'svg', {
        viewBox: '0 0 ' + WIDTH + ' ' + height,
        width: WIDTH,
        height: height,
        role: 'img',
        'aria-label': chart.title
      },
      figure);
  element('title', {}, root, chart.title);

  if (chart.kind === 'stacked_bars') {
    if (!Array.isArray(chart.categories))
      throw new Error('chart ' + (index + 1) + ' has stacked bars but no categories');
    drawStackedBars(chart, root, plot, legendTop, entries, colors);
    return;
  }
  const x = xAxis(chart);
  const y = yAxis(largestY(chart));
  drawAxes(root, chart, plot, x, y);
  const place = (vx, vy) =>
      [plot.left + x.fraction(vx) * plot.width,
       plot.top + plot.height - y.fraction(vy) * plot.height];
  for (const baseline of chart.baselines)
    drawBaseline(root, chart, baseline, colors.get(baseline.group), plot, y);
  const secondaryFirst =
      chart.series.filter((s) => s.dashed).concat(chart.series.filter((s) => !s.dashed));
  for (const series of secondaryFirst)
    drawSeries(root, chart, series, colors.get(series.group), place);
  if (entries.length === 0) {
    element(
        'text',
        {x: plot.left + plot.width / 2, y: plot.top + plot.height / 2, 'text-anchor': 'middle'},
        root, 'no data');
  }
  drawLegend(root, entries, legendTop);
  counts.charts += 1;
}

function record() {
  document.body.dataset.chartsDrawn = String(counts.charts);
  document.body.dataset.pointsDrawn = String(counts.points);
}

function showError(error) {
  const message = error && error.message ? error.message : String(error);
  document.body.dataset.chartError = message;
  const box = document.getElementById('chart-error');
  if (box) {
    box.textContent = 'The charts could not be drawn: ' + message;
    box.hidden = false;
  }
}

function main() {
  const source = document.getElementById('chart-data');
  if (!source) throw new Error('the page has no chart data');
  const data = JSON.parse(source.textContent);
  if (!data || !Array.isArray(data.charts)) throw new Error('the chart data has no list of charts');
  const container = document.getElementById('charts');
  if (data.charts.length === 0)
    htmlElement('p', 'note', container, 'The input files hold no charts.');
  data.charts.forEach((chart, index) => drawChart(chart, index, container));
}

window.addEventListener('error', (event) => showError(event.error || event.message));
try {
  main();
} catch (error) {
  showError(error);
}
record();
})();
