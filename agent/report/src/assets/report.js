// zcal report: draws the charts of the page from its embedded data (the
// JSON block #zcal-data) with Chart.js, which the page embeds after this
// script. Everything else on the page is static HTML,
// so the verdict table and the host facts read without scripts.
'use strict';
(function () {
  // What goes wrong is shown on the page (and counted in data-errors), not
  // only in a console nobody opens.
  let errorCount = 0;
  function showError(text) {
    errorCount += 1;
    document.documentElement.dataset.errors = String(errorCount);
    const box = document.getElementById('zcal-errors');
    if (!box) return;
    box.hidden = false;
    const item = document.createElement('li');
    item.textContent = text;
    box.querySelector('ul').appendChild(item);
  }
  window.addEventListener('error', (e) => {
    showError('script error: ' + e.message + ' (line ' + e.lineno + ')');
  });
  window.addEventListener('unhandledrejection', (e) => {
    showError('script error: ' + e.reason);
  });
  document.addEventListener('securitypolicyviolation', (e) => {
    showError('blocked by the Content-Security-Policy: ' + e.violatedDirective);
  });

  // Okabe & Ito's colour-blind-safe palette; the two sends also differ in
  // point shape and the fits in dash, so that nothing rests on colour alone.
  const kZerocopy = '#D55E00';  // vermillion
  const kBaseline = '#0072B2';  // blue
  const kMarker = '#000000';
  const kInterval = 'rgba(0, 0, 0, 0.10)';
  const kBitsPerGbit = 1e9;
  const kDrawAtOnce = 8;  // charts of a lazily drawn page drawn at load
  // 125 mm x 65 mm at 96 px per inch: .chart in report.css, @media print.
  const kPrintSize = [472, 246];

  function sizeText(bytes) {
    const units = ['B', 'KiB', 'MiB', 'GiB'];
    let value = bytes;
    let unit = 0;
    while (value >= 1024 && unit < units.length - 1) {
      value /= 1024;
      unit += 1;
    }
    return (Math.round(value * 10) / 10) + ' ' + units[unit];
  }

  function powersOfTwo(min, max) {
    const ticks = [];
    for (let v = 1; v <= max; v *= 2) {
      if (v >= min) ticks.push({value: v});
    }
    // At most ~12 labels: every other power when the range is wide.
    const step = Math.ceil(ticks.length / 12);
    return ticks.filter((_, i) => i % step === 0);
  }

  // Columns of a size row: size, then zerocopy and baseline throughput
  // (bytes/s) and its spread, CPU (ns/byte) and its spread.
  const kColumns = {
    throughput: {zerocopy: [1, 2], baseline: [5, 6], scale: 8 / kBitsPerGbit},
    cpu: {zerocopy: [3, 4], baseline: [7, 8], scale: 1},
  };

  function points(entry, kind, side) {
    const [value, spread] = kColumns[kind][side];
    const scale = kColumns[kind].scale;
    return entry.sizes.map((row) => ({
      x: row[0], y: row[value] * scale, spread: row[spread] * scale,
    }));
  }

  // The calibrator's curves (report_json.h): CPU per byte a + b/s, and
  // throughput capped by the line rate and the CPU-bound rate.
  function fitCurve(fit, kind, min, max) {
    if (!fit) return null;
    const [perByte, perSend, lineRate, cores] = fit;
    if (kind === 'throughput' && lineRate === null && cores === null) return null;
    const curve = [];
    const n = 48;
    for (let i = 0; i <= n; i += 1) {
      const s = min * Math.pow(max / min, i / n);
      const cpu = perByte + perSend / s;
      if (kind === 'cpu') {
        curve.push({x: s, y: cpu});
        continue;
      }
      let rate = Infinity;
      if (lineRate !== null) rate = lineRate;
      if (cores !== null && cpu > 0) rate = Math.min(rate, cores * 1e9 / cpu);
      curve.push({x: s, y: rate * kColumns.throughput.scale});
    }
    return curve;
  }

  // Whiskers of median +- spread at every size.
  const spreadPlugin = {
    id: 'zcalSpread',
    afterDatasetsDraw(chart) {
      const ctx = chart.ctx;
      const y = chart.scales.y;
      chart.data.datasets.forEach((set, index) => {
        if (!set.zcalSpread || !chart.isDatasetVisible(index)) return;
        ctx.save();
        ctx.strokeStyle = set.borderColor;
        ctx.lineWidth = 1;
        for (const p of set.data) {
          if (!(p.spread > 0)) continue;
          const x = chart.scales.x.getPixelForValue(p.x);
          const low = Math.max(p.y - p.spread, y.min);
          const top = y.getPixelForValue(Math.min(p.y + p.spread, y.max));
          const bottom = y.getPixelForValue(low);
          ctx.beginPath();
          ctx.moveTo(x, top);
          ctx.lineTo(x, bottom);
          ctx.moveTo(x - 3, top);
          ctx.lineTo(x + 3, top);
          ctx.moveTo(x - 3, bottom);
          ctx.lineTo(x + 3, bottom);
          ctx.stroke();
        }
        ctx.restore();
      });
    },
  };

  // The threshold as a line, its interval as a band; where they were drawn
  // and where the axis put its ticks is written onto the canvas
  // (data-marker-x, data-ticks, in CSS pixels) for tools that check it.
  const markPlugin = {
    id: 'zcalMarks',
    beforeDatasetsDraw(chart, args, options) {
      const x = chart.scales.x;
      const area = chart.chartArea;
      if (!options.interval) return;
      const [low, high] = options.interval;
      const left = x.getPixelForValue(Math.max(low, x.min));
      const right = high === null ? area.right : x.getPixelForValue(Math.min(high, x.max));
      chart.ctx.save();
      chart.ctx.fillStyle = kInterval;
      chart.ctx.fillRect(left, area.top, Math.max(right - left, 1), area.bottom - area.top);
      chart.ctx.restore();
    },
    afterDatasetsDraw(chart, args, options) {
      const x = chart.scales.x;
      const area = chart.chartArea;
      const canvas = chart.canvas;
      canvas.dataset.ticks = JSON.stringify(
          x.ticks.map((t, i) => [t.value, Math.round(x.getPixelForTick(i) * 10) / 10]));
      if (options.threshold === null) return;
      const px = x.getPixelForValue(options.threshold);
      const ctx = chart.ctx;
      ctx.save();
      ctx.strokeStyle = kMarker;
      ctx.lineWidth = 2;
      ctx.setLineDash([]);
      ctx.beginPath();
      ctx.moveTo(px, area.top);
      ctx.lineTo(px, area.bottom);
      ctx.stroke();
      ctx.fillStyle = kMarker;
      ctx.font = 'bold 12px sans-serif';
      const label = 'threshold ' + sizeText(options.threshold);
      const width = ctx.measureText(label).width;
      const textX = px + 4 + width < area.right ? px + 4 : px - 4 - width;
      ctx.fillText(label, textX, area.top + 12);
      ctx.restore();
      canvas.dataset.markerX = String(Math.round(px * 10) / 10);
    },
  };

  function datasets(entry, kind, min, max) {
    const sets = [];
    const sides = [
      ['zerocopy', entry.method, kZerocopy, 'triangle'],
      ['baseline', entry.baseline, kBaseline, 'circle'],
    ];
    for (const [side, name, colour, shape] of sides) {
      sets.push({
        label: name + ' (median \u00b1 spread)', data: points(entry, kind, side),
        borderColor: colour, backgroundColor: colour, pointStyle: shape,
        pointRadius: 4, showLine: true, borderWidth: 1.5, zcalSpread: true,
      });
    }
    for (const [side, name, colour] of sides) {
      const curve = fitCurve(entry.fit ? entry.fit[side] : null, kind, min, max);
      if (!curve) continue;
      sets.push({
        label: name + ' (fitted model)', data: curve, borderColor: colour,
        backgroundColor: colour, borderDash: [6, 4], pointRadius: 0,
        showLine: true, borderWidth: 1.5,
      });
    }
    return sets;
  }

  function draw(canvas, entry) {
    const kind = canvas.dataset.kind;
    const sizes = entry.sizes.map((row) => row[0]);
    let min = Math.pow(2, Math.floor(Math.log2(Math.min(...sizes))));
    let max = Math.pow(2, Math.ceil(Math.log2(Math.max(...sizes))));
    if (min === max) {  // one probed size: an octave either side
      min /= 2;
      max *= 2;
    }
    const throughput = kind === 'throughput';
    new Chart(canvas, {
      type: 'scatter',
      data: {datasets: datasets(entry, kind, min, max)},
      options: {
        animation: false,
        responsive: true,
        maintainAspectRatio: false,
        scales: {
          x: {
            type: 'logarithmic', min: min, max: max,
            title: {display: true, text: 'message size (log scale)'},
            afterBuildTicks: (scale) => { scale.ticks = powersOfTwo(min, max); },
            ticks: {callback: (value) => sizeText(value), autoSkip: false,
                    maxRotation: 0},
          },
          y: throughput ? {
            type: 'linear', beginAtZero: true,
            title: {display: true, text: 'throughput (Gbit/s)'},
          } : {
            type: 'logarithmic',
            title: {display: true, text: 'CPU per byte (ns, log scale)'},
          },
        },
        plugins: {
          legend: {position: 'bottom', labels: {usePointStyle: true}},
          tooltip: {callbacks: {title: (items) => sizeText(items[0].parsed.x)}},
          zcalMarks: {threshold: entry.threshold, interval: entry.interval},
        },
      },
      plugins: [spreadPlugin, markPlugin],
    });
    canvas.dataset.rendered = '1';
  }

  // data-render-ms: from navigation start to the last chart drawn so far.
  let drawn = 0;
  function noteDrawn() {
    document.documentElement.dataset.chartsDrawn = String(drawn);
    document.documentElement.dataset.renderMs = String(Math.round(performance.now()));
  }

  function start() {
    const data = JSON.parse(document.getElementById('zcal-data').textContent);
    const byId = new Map(data.entries.map((e) => [e.id, e]));
    const pending = new Set(document.querySelectorAll('canvas[data-entry]'));
    const drawOne = (canvas) => {
      if (!pending.delete(canvas)) return;
      const entry = byId.get(canvas.dataset.entry);
      if (entry && entry.sizes.length > 0) {
        draw(canvas, entry);
        drawn += 1;
      }
    };
    // A large state is drawn as it scrolls into view (the first charts at
    // once), and whole for print.
    if (data.lazy && 'IntersectionObserver' in window) {
      Array.from(pending).slice(0, kDrawAtOnce).forEach(drawOne);
      const observer = new IntersectionObserver((seen) => {
        for (const item of seen) {
          if (!item.isIntersecting) continue;
          observer.unobserve(item.target);
          drawOne(item.target);
        }
        noteDrawn();
      }, {rootMargin: '600px 0px'});
      pending.forEach((canvas) => observer.observe(canvas));
    } else {
      Array.from(pending).forEach(drawOne);
    }
    noteDrawn();
    window.addEventListener('beforeprint', () => {
      Array.from(pending).forEach(drawOne);
      noteDrawn();
      Object.values(Chart.instances).forEach((chart) => chart.resize(...kPrintSize));
    });
    window.addEventListener('afterprint', () => {
      Object.values(Chart.instances).forEach((chart) => chart.resize());
    });
  }

  document.addEventListener('DOMContentLoaded', () => {
    if (typeof Chart === 'undefined') {
      showError('Chart.js did not load; the tables above still hold every verdict');
      return;
    }
    start();
  });
})();
