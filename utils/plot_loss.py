#!/usr/bin/env python3
"""Draws amp-run training logs as one SVG picture: the loss over the steps
(top panel) and the loss scale on a log2 axis (bottom panel), several runs
in one picture. No plotting package: the SVG elements are written here.

    utils/plot_loss.py fp32.csv amp.csv -o loss.svg
    utils/plot_loss.py a.csv b.csv --label fp32 --label "AMP fp16" -o loss.svg

Input: the CSV that `amp-run --log` writes (docs/amp-run.md), columns
step,loss,loss_scale,all_finite,skipped,optimizer_step and, with
--log-time, seconds. Each run is one polyline per panel, with one point
per step whose loss is finite (a step with a NaN or infinite loss is
marked with a cross at the top of the loss panel instead). Runs whose
loss scale is 1 at every step (fp32, bf16: no loss scaling) are left out of
the scale panel, and the panel is left out when no run has a scale.
Labels are the --label values, in order, or the file names.

A missing or malformed file is an error naming it (exit 1), and nothing is
written.
"""

import argparse
import csv
import math
import os
import sys
from xml.sax.saxutils import escape

REQUIRED = ("step", "loss", "loss_scale", "all_finite", "skipped",
            "optimizer_step")
COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
          "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
WIDTH = 720
LEFT, RIGHT = 72, 24
LOSS_TOP, LOSS_HEIGHT = 40, 260
SCALE_GAP, SCALE_HEIGHT = 56, 120
BOTTOM = 48


class LogError(Exception):
    pass


def read_log(path):
    """Returns [(step, loss, loss_scale, skipped)] of one --log file."""
    try:
        f = open(path, newline="")
    except OSError as e:
        raise LogError(f"{path}: cannot read: {e.strerror}")
    with f:
        reader = csv.reader(f)
        header = next(reader, None)
        if header is None:
            raise LogError(f"{path}: empty file, not an amp-run --log file")
        missing = [c for c in REQUIRED if c not in header]
        if missing:
            raise LogError(f"{path}:1: not an amp-run --log file "
                           f"(missing columns: {', '.join(missing)})")
        col = {name: i for i, name in enumerate(header)}
        rows = []
        for line, fields in enumerate(reader, start=2):
            if not fields:
                continue
            if len(fields) != len(header):
                raise LogError(f"{path}:{line}: {len(fields)} fields, the "
                               f"header has {len(header)}")
            try:
                step = int(fields[col["step"]])
                loss = float(fields[col["loss"]])
                scale = float(fields[col["loss_scale"]])
                skipped = int(fields[col["skipped"]])
            except ValueError as e:
                raise LogError(f"{path}:{line}: not a number: {e}")
            if rows and step <= rows[-1][0]:
                raise LogError(f"{path}:{line}: step {step} after step "
                               f"{rows[-1][0]}")
            if not (scale > 0 and math.isfinite(scale)):
                raise LogError(f"{path}:{line}: loss scale {scale} is not "
                               f"positive and finite")
            rows.append((step, loss, scale, skipped))
    if not rows:
        raise LogError(f"{path}: no steps")
    return rows


def nice_ticks(lo, hi, count=6):
    """Round tick values (1, 2 or 5 times a power of ten) covering [lo, hi]."""
    if hi <= lo:
        hi = lo + (abs(lo) if lo else 1.0)
    raw = (hi - lo) / count
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    first = math.floor(lo / step) * step
    last = math.ceil(hi / step) * step
    n = round((last - first) / step)
    return [first + i * step for i in range(n + 1)]


def fmt(v):
    return f"{v:.6g}"


def stroke(i, n):
    """Run i of n: earlier runs wider and lighter, so that curves that lie
    on each other (AMP on fp32) all stay visible."""
    width = 1.2 if n == 1 else 1.2 + 3.0 * (n - 1 - i) / (n - 1)
    opacity = 1.0 if i == n - 1 else 0.6
    return f'stroke-width="{width:.2f}" stroke-opacity="{opacity}"'


def line(x1, y1, x2, y2, color, extra=""):
    return (f'<line x1="{x1:.2f}" y1="{y1:.2f}" x2="{x2:.2f}" y2="{y2:.2f}" '
            f'stroke="{color}"{extra}/>')


def text(x, y, body, anchor="start", extra=""):
    return (f'<text x="{x:.2f}" y="{y:.2f}" text-anchor="{anchor}"{extra}>'
            f'{body}</text>')


def pt(x, y):
    return f"{x:.2f},{y:.2f}"


class Panel:
    """A plot area with linear x and linear or log2 y, in SVG coordinates."""

    def __init__(self, top, height, xlo, xhi, ylo, yhi):
        self.top, self.height = top, height
        self.left, self.width = LEFT, WIDTH - LEFT - RIGHT
        self.xlo, self.xhi, self.ylo, self.yhi = xlo, xhi, ylo, yhi

    def x(self, v):
        span = self.xhi - self.xlo or 1
        return self.left + (v - self.xlo) / span * self.width

    def y(self, v):
        span = self.yhi - self.ylo or 1
        return self.top + self.height - (v - self.ylo) / span * self.height

    def frame(self, out, xticks, yticks, ylabel, xlabel=None):
        bottom = self.top + self.height
        right = self.left + self.width
        out.append(f'<rect x="{self.left}" y="{self.top}" '
                   f'width="{self.width}" height="{self.height}" '
                   f'fill="none" stroke="#444"/>')
        for v, label in xticks:
            x = self.x(v)
            out.append(line(x, bottom, x, bottom + 5, "#444"))
            out.append(text(x, bottom + 18, label, "middle"))
        for v, label in yticks:
            y = self.y(v)
            out.append(line(self.left, y, right, y, "#ddd"))
            out.append(line(self.left - 5, y, self.left, y, "#444"))
            out.append(text(self.left - 8, y + 4, label, "end"))
        mid = self.top + self.height / 2
        out.append(text(16, mid, ylabel, "middle",
                        f' transform="rotate(-90 16 {mid:.2f})"'))
        if xlabel:
            out.append(text(self.left + self.width / 2, bottom + 36, xlabel,
                            "middle"))


def render(runs, title):
    """runs: [(label, rows)]. Returns the SVG text."""
    steps = [r[0] for _, rows in runs for r in rows]
    xticks = [v for v in nice_ticks(min(steps), max(steps))]
    xlo, xhi = xticks[0], xticks[-1]
    finite = [r[1] for _, rows in runs for r in rows if math.isfinite(r[1])]
    if not finite:
        finite = [0.0, 1.0]
    yticks = nice_ticks(min(finite), max(finite))
    scaled = [(i, rows) for i, (_, rows) in enumerate(runs)
              if any(r[2] != 1 for r in rows)]

    height = LOSS_TOP + LOSS_HEIGHT + BOTTOM
    if scaled:
        scale_top = LOSS_TOP + LOSS_HEIGHT + SCALE_GAP
        height = scale_top + SCALE_HEIGHT + BOTTOM
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" '
           f'height="{height}" viewBox="0 0 {WIDTH} {height}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{WIDTH}" height="{height}" fill="white"/>']
    if title:
        out.append(f'<text x="{WIDTH / 2}" y="22" text-anchor="middle" '
                   f'font-size="15">{escape(title)}</text>')

    loss = Panel(LOSS_TOP, LOSS_HEIGHT, xlo, xhi, yticks[0], yticks[-1])
    loss.frame(out, [(v, fmt(v)) for v in xticks],
               [(v, fmt(v)) for v in yticks], "loss",
               None if scaled else "step")
    for i, (label, rows) in enumerate(runs):
        color = COLORS[i % len(COLORS)]
        points = " ".join(pt(loss.x(s), loss.y(v)) for s, v, _, _ in rows
                          if math.isfinite(v))
        out.append(f'<polyline class="loss" data-run="{i}" '
                   f'points="{points}" fill="none" stroke="{color}" '
                   f'{stroke(i, len(runs))}/>')
        for s, v, _, _ in rows:
            if not math.isfinite(v):
                x, y = loss.x(s), LOSS_TOP + 6
                out.append(f'<path class="nonfinite" data-run="{i}" '
                           f'd="M{x - 4:.2f},{y - 4} L{x + 4:.2f},{y + 4} '
                           f'M{x - 4:.2f},{y + 4} L{x + 4:.2f},{y - 4}" '
                           f'stroke="{color}" stroke-width="1.5"/>')

    # Legend, top right of the loss panel.
    lx = loss.left + loss.width - 10
    longest = max(len(label) for label, _ in runs)
    box_w = 40 + 7 * longest
    out.append(f'<rect x="{lx - box_w}" y="{LOSS_TOP + 8}" width="{box_w}" '
               f'height="{18 * len(runs) + 8}" fill="white" '
               f'fill-opacity="0.85" stroke="#bbb"/>')
    for i, (label, _) in enumerate(runs):
        y = LOSS_TOP + 22 + 18 * i
        color = COLORS[i % len(COLORS)]
        out.append(line(lx - box_w + 8, y - 4, lx - box_w + 30, y - 4,
                        color, " " + stroke(i, len(runs))))
        out.append(text(lx - box_w + 36, y, escape(label), "start",
                        ' class="legend"'))

    if scaled:
        exps = [math.log2(r[2]) for _, rows in scaled for r in rows]
        elo, ehi = math.floor(min(exps)), math.ceil(max(exps))
        if elo == ehi:
            elo, ehi = elo - 1, ehi + 1
        every = max(1, math.ceil((ehi - elo) / 6))
        ticks = [(e, f'2<tspan dy="-5" font-size="9">{e}</tspan>')
                 for e in range(elo, ehi + 1) if (e - elo) % every == 0]
        panel = Panel(scale_top, SCALE_HEIGHT, xlo, xhi, elo, ehi)
        panel.frame(out, [(v, fmt(v)) for v in xticks], ticks,
                    "loss scale", "step")
        for i, rows in scaled:
            color = COLORS[i % len(COLORS)]
            points = " ".join(pt(panel.x(s), panel.y(math.log2(v)))
                              for s, _, v, _ in rows)
            out.append(f'<polyline class="scale" data-run="{i}" '
                       f'points="{points}" fill="none" stroke="{color}" '
                       f'{stroke(i, len(runs))}/>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(
        description="Draw amp-run --log files (loss, loss scale) as SVG.")
    ap.add_argument("logs", nargs="+", help="amp-run --log CSV files")
    ap.add_argument("-o", "--output", required=True, help="the SVG to write")
    ap.add_argument("--label", action="append", default=[],
                    help="a run's label, once per file in order "
                         "(default: the file names)")
    ap.add_argument("--title", default="", help="a title above the plot")
    args = ap.parse_args()
    if args.label and len(args.label) != len(args.logs):
        ap.error(f"{len(args.label)} --label for {len(args.logs)} files")
    labels = args.label or [os.path.basename(p) for p in args.logs]
    try:
        runs = [(label, read_log(p)) for label, p in zip(labels, args.logs)]
    except LogError as e:
        print(f"plot_loss.py: error: {e}", file=sys.stderr)
        return 1
    svg = render(runs, args.title)
    tmp = args.output + ".tmp"
    try:
        with open(tmp, "w") as f:
            f.write(svg)
        os.replace(tmp, args.output)
    except OSError as e:
        if os.path.exists(tmp):
            os.remove(tmp)
        print(f"plot_loss.py: error: {args.output}: {e.strerror}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
