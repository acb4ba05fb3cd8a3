// The lifeform viewer's drawing: a frame's ridges as SVG paths, by the rules of quineling/runtime/frame_svg.py
// (the CLI's --svg writes the same picture; the browser test compares the two number for number).
"use strict";

(function () {
  const WIDTH = 640, HEIGHT = 400, MARGIN = 16;
  const TILT = Math.PI / 3;
  const PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2"];
  const SEAM_COLOUR = "#222222";
  const SVG_NS = "http://www.w3.org/2000/svg";

  // Python's round(v, 2) rounds half to even on the binary value; toFixed agrees within 0.01.
  const round2 = (v) => Math.round(v * 100) / 100;

  function screenPoints(points) {
    const cosT = Math.cos(TILT), sinT = Math.sin(TILT);
    const flat = points.map((p) => [p[0], -(p[1] * cosT + p[2] * sinT)]);
    if (flat.length === 0) return [];
    let minX = Infinity, maxX = -Infinity, minY = Infinity, maxY = -Infinity;
    for (const [x, y] of flat) {
      if (x < minX) minX = x;
      if (x > maxX) maxX = x;
      if (y < minY) minY = y;
      if (y > maxY) maxY = y;
    }
    const scale = Math.min((WIDTH - 2 * MARGIN) / ((maxX - minX) || 1), (HEIGHT - 2 * MARGIN) / ((maxY - minY) || 1));
    const offX = (WIDTH - scale * (maxX + minX)) / 2;
    const offY = (HEIGHT - scale * (maxY + minY)) / 2;
    return flat.map(([x, y]) => [round2(offX + scale * x), round2(offY + scale * y)]);
  }

  function ridgePaths(frame) {
    const at = screenPoints(frame.points);
    const owners = frame.owners;
    const segments = new Map();
    for (const [i, j] of frame.ridges) {
      const key = owners[i] === owners[j] ? "owner-" + owners[i] : "seams";
      if (!segments.has(key)) segments.set(key, []);
      segments.get(key).push(
        "M" + at[i][0].toFixed(2) + " " + at[i][1].toFixed(2) + "L" + at[j][0].toFixed(2) + " " + at[j][1].toFixed(2));
    }
    const paths = {};
    for (const [key, parts] of segments) paths[key] = parts.join("");
    return paths;
  }

  const colour = (owner) => PALETTE[owner % PALETTE.length];

  // An <svg> element of the frame; every value reaches the DOM as an attribute or text, never as markup.
  function frameSvg(frame, title) {
    const svg = document.createElementNS(SVG_NS, "svg");
    svg.setAttribute("viewBox", `0 0 ${WIDTH} ${HEIGHT}`);
    svg.setAttribute("role", "img");
    svg.setAttribute("aria-label", title);
    svg.classList.add("frame");
    const paths = ridgePaths(frame);
    const keys = Object.keys(paths).sort((a, b) =>
      (a === "seams") - (b === "seams") || a.length - b.length || (a < b ? -1 : a > b ? 1 : 0));
    for (const key of keys) {
      const path = document.createElementNS(SVG_NS, "path");
      path.setAttribute("id", "viewer-" + key);
      path.setAttribute("d", paths[key]);
      path.setAttribute("fill", "none");
      path.setAttribute("stroke", key === "seams" ? SEAM_COLOUR : colour(Number(key.slice(6))));
      path.setAttribute("stroke-width", key === "seams" ? "0.9" : "0.5");
      path.setAttribute("stroke-opacity", "0.8");
      path.dataset.ridges = key;
      svg.appendChild(path);
    }
    return svg;
  }

  window.QuinelingViewer = { screenPoints, ridgePaths, frameSvg, colour, WIDTH, HEIGHT };
})();
