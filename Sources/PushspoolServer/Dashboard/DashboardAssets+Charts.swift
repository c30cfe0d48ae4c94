extension DashboardAssets {
    /// The dashboard's charts: SVG built element by element (no markup from strings), numbers only.
    static let charts = #"""
"use strict";
(function () {
  const NS = "http://www.w3.org/2000/svg";
  function node(name, attrs, text) {
    const n = document.createElementNS(NS, name);
    for (const k in attrs) n.setAttribute(k, String(attrs[k]));
    if (text !== undefined) n.textContent = String(text);
    return n;
  }
  function fmtTime(seconds) {
    const d = new Date(seconds * 1000);
    return d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit" });
  }
  // Sends over time: stacked bars of delivered and failed per bucket (per second of the bucket).
  function series(s, title) {
    const w = 720, h = 220, left = 48, bottom = 26, top = 10;
    const svg = node("svg", { viewBox: `0 0 ${w} ${h}`, class: "chart", role: "img" });
    svg.appendChild(node("title", {}, title));
    const n = s.delivered.length;
    if (n === 0) {
      svg.appendChild(node("text", { x: w / 2, y: h / 2, "text-anchor": "middle" }, "nothing sent yet"));
      return svg;
    }
    const rates = s.delivered.map((d, i) => [d / s.step_s, s.failed[i] / s.step_s]);
    const max = Math.max(1, ...rates.map(r => r[0] + r[1]));
    const plotW = w - left - 8, plotH = h - top - bottom, bw = plotW / n;
    for (let k = 0; k <= 4; k++) {
      const y = top + plotH - plotH * k / 4;
      svg.appendChild(node("line", { x1: left, x2: w - 8, y1: y, y2: y, stroke: "#e3e7eb" }));
      svg.appendChild(node("text", { x: left - 6, y: y + 4, "text-anchor": "end" }, formatNumber(max * k / 4)));
    }
    rates.forEach((r, i) => {
      const x = left + i * bw, hd = plotH * r[0] / max, hf = plotH * r[1] / max;
      if (hd > 0) svg.appendChild(node("rect", { x: x + .5, y: top + plotH - hd, width: Math.max(1, bw - 1), height: hd, fill: "#1d7a3a" }));
      if (hf > 0) svg.appendChild(node("rect", { x: x + .5, y: top + plotH - hd - hf, width: Math.max(1, bw - 1), height: hf, fill: "#b3261e" }));
    });
    svg.appendChild(node("text", { x: left, y: h - 6 }, fmtTime(s.start)));
    svg.appendChild(node("text", { x: w - 8, y: h - 6, "text-anchor": "end" }, fmtTime(s.start + n * s.step_s)));
    svg.appendChild(node("text", { x: left + plotW / 2, y: h - 6, "text-anchor": "middle" }, `per second, ${s.step_s} s buckets`));
    return svg;
  }
  // The funnel: one horizontal bar per stage, its count and its share of the first stage.
  function funnel(stages, title) {
    const w = 720, rowH = 30, h = stages.length * rowH + 10, left = 90;
    const svg = node("svg", { viewBox: `0 0 ${w} ${h}`, class: "chart", role: "img" });
    svg.appendChild(node("title", {}, title));
    const max = Math.max(1, ...stages.map(s => s.value));
    stages.forEach((s, i) => {
      const y = 5 + i * rowH, bw = (w - left - 140) * s.value / max;
      svg.appendChild(node("text", { x: left - 8, y: y + 18, "text-anchor": "end" }, s.label));
      svg.appendChild(node("rect", { x: left, y: y + 4, width: Math.max(bw, 1), height: rowH - 10, fill: "#1f5fbf", opacity: 1 - i * .12 }));
      svg.appendChild(node("text", { x: left + bw + 8, y: y + 18 }, formatNumber(s.value) + (s.rate === null || s.rate === undefined ? "" : `  (${(s.rate * 100).toFixed(1)}%)`)));
    });
    return svg;
  }
  function formatNumber(v) {
    if (v >= 1e6) return (v / 1e6).toFixed(1) + "M";
    if (v >= 1e4) return (v / 1e3).toFixed(0) + "k";
    if (v >= 100 || Number.isInteger(v)) return String(Math.round(v));
    return v.toFixed(1);
  }
  window.PushspoolCharts = { series, funnel, formatNumber };
})();
"""#
}
