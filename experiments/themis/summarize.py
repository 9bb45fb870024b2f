#!/usr/bin/env python3
"""The ThemisIO-style comparison over several runs of experiments/themis/scenario.toml.

Reads RUN/summary.json of each run directory (written by `sluice experiment run`) and
writes OUT/runs.md (each set-up's measures: mean, min-max over the runs, the change of
the mean against FIFO and Static, beside ThemisIO's published gains) and
OUT/comparison.svg (the same as bars with their range). Standard library only.

Measures, per set-up and run:
  throughput     all bytes / (first arrival to last end), MB/s (utilization x capacity)
  mean slowdown  mean over the jobs of completion / time with the whole pool alone
  slowdown CV    standard deviation / mean of the jobs' slowdowns within the run
Over the runs:
  run-to-run CV  each job's completion time's standard deviation / mean over the runs,
                 averaged over the jobs (how much a job's time varies from run to run)
"""

import argparse
import json
import os
import statistics


def load(dirs):
    runs = []
    for d in dirs:
        with open(os.path.join(d, "summary.json")) as f:
            runs.append(json.load(f))
    return runs


def cv(xs):
    m = statistics.fmean(xs)
    return statistics.pstdev(xs) / m if m else 0.0


def measures(runs):
    """{setup: {measure: [value per run]}} in the first run's order of set-ups."""
    order = [m["setup"] for m in runs[0]["setups"]]
    out = {s: {"throughput": [], "mean slowdown": [], "slowdown CV": []} for s in order}
    completions = {s: {} for s in order}
    for r in runs:
        for m in r["setups"]:
            s = m["setup"]
            if s not in out:
                continue
            slow = m.get("slowdown") or []
            if not slow or any(x is None for x in slow):
                continue
            out[s]["throughput"].append(m["utilization"] * r["capacity"] * 1e-6)
            out[s]["mean slowdown"].append(statistics.fmean(slow))
            out[s]["slowdown CV"].append(cv(slow))
            for job, c in m["completion"]:
                if c is not None:
                    completions[s].setdefault(job, []).append(c)
    for s in order:
        per_job = [cv(v) for v in completions[s].values() if len(v) > 1]
        out[s]["run-to-run CV"] = [statistics.fmean(per_job)] if per_job else []
    return order, out


def table(order, out, runs):
    names = ["throughput", "mean slowdown", "slowdown CV", "run-to-run CV"]
    units = {"throughput": " (MB/s)"}
    t = "| set-up | runs | " + " | ".join(n + units.get(n, "") for n in names) + " |\n"
    t += "|---|---|" + "---|" * len(names) + "\n"
    for s in order:
        cells = []
        for n in names:
            v = out[s][n]
            if not v:
                cells.append("–")
            elif len(v) == 1:
                cells.append(f"{v[0]:.3f}")
            else:
                cells.append(f"{statistics.fmean(v):.3f} ({min(v):.3f}–{max(v):.3f})")
        t += f"| {s} | {len(out[s]['throughput'])} | " + " | ".join(cells) + " |\n"
    return t


def changes(order, out, against):
    """The mean's change of each set-up's measures against `against`'s, in percent."""
    t = f"| against {against} | throughput | slowdown CV | run-to-run CV | mean slowdown |\n"
    t += "|---|---|---|---|---|\n"
    base = out[against]
    for s in order:
        if s == against:
            continue
        row = []
        for n in ["throughput", "slowdown CV", "run-to-run CV", "mean slowdown"]:
            if out[s][n] and base[n] and statistics.fmean(base[n]):
                row.append(f"{(statistics.fmean(out[s][n]) / statistics.fmean(base[n]) - 1) * 100:+.1f}%")
            else:
                row.append("–")
        t += f"| {s} | " + " | ".join(row) + " |\n"
    return t


COLOURS = ["#7f7f7f", "#d62728", "#ff7f0e", "#2ca02c", "#1f77b4", "#9467bd"]


def svg(order, out, path, title):
    panels = [("throughput (MB/s)", "throughput"), ("jobs' slowdown: coefficient of variation", "slowdown CV"),
              ("mean slowdown", "mean slowdown"), ("run-to-run CV of a job's completion", "run-to-run CV")]
    pw, ph, pad = 300, 230, 50
    width, height = pw * 2 + 40, ph * 2 + 70
    e = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
         f'font-family="DejaVu Sans, sans-serif" font-size="11">',
         f'<rect width="{width}" height="{height}" fill="white"/>',
         f'<text x="{width / 2}" y="20" text-anchor="middle" font-size="14">{title}</text>']
    for k, (label, key) in enumerate(panels):
        x0, y0 = 20 + (k % 2) * (pw + 10), 40 + (k // 2) * (ph + 15)
        vals = {s: out[s][key] for s in order if out[s][key]}
        top = max((max(v) for v in vals.values()), default=1) * 1.15 or 1
        e.append(f'<text x="{x0 + pw / 2}" y="{y0 + 12}" text-anchor="middle">{label}</text>')
        base_y, plot_h = y0 + ph - 30, ph - 60
        e.append(f'<line x1="{x0 + pad - 5}" y1="{base_y}" x2="{x0 + pw}" y2="{base_y}" stroke="#444"/>')
        for i in range(5):
            v = top * i / 4
            y = base_y - plot_h * i / 4
            e.append(f'<line x1="{x0 + pad - 5}" y1="{y:.1f}" x2="{x0 + pw}" y2="{y:.1f}" stroke="#eee"/>')
            e.append(f'<text x="{x0 + pad - 8}" y="{y + 4:.1f}" text-anchor="end">{v:.2f}</text>')
        bw = (pw - pad) / max(1, len(order))
        for i, s in enumerate(order):
            v = out[s][key]
            if not v:
                continue
            m = statistics.fmean(v)
            x = x0 + pad + i * bw + bw * 0.15
            h = plot_h * m / top
            e.append(f'<rect x="{x:.1f}" y="{base_y - h:.1f}" width="{bw * 0.7:.1f}" height="{h:.1f}" '
                     f'fill="{COLOURS[i % len(COLOURS)]}"/>')
            if len(v) > 1:
                cx = x + bw * 0.35
                lo, hi = base_y - plot_h * min(v) / top, base_y - plot_h * max(v) / top
                e.append(f'<line x1="{cx:.1f}" y1="{lo:.1f}" x2="{cx:.1f}" y2="{hi:.1f}" stroke="black"/>')
                for yy in (lo, hi):
                    e.append(f'<line x1="{cx - 5:.1f}" y1="{yy:.1f}" x2="{cx + 5:.1f}" y2="{yy:.1f}" stroke="black"/>')
            e.append(f'<text x="{x + bw * 0.35:.1f}" y="{base_y + 14}" text-anchor="middle">{s}</text>')
    e.append(f'<text x="{width / 2}" y="{height - 8}" text-anchor="middle" fill="#555">'
             'bars: mean over the runs; whiskers: smallest and largest run</text>')
    e.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(e) + "\n")


def main():
    a = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    a.add_argument("runs", nargs="+", help="run directories (each with summary.json)")
    a.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)))
    args = a.parse_args()
    runs = load(args.runs)
    order, out = measures(runs)
    md = f"# {runs[0]['scenario']}: {len(runs)} runs\n\n"
    md += "Made with `python3 experiments/themis/summarize.py RUN…` (docs/experiments.md). "
    md += "Mean (min–max) over the runs; the run-to-run CV is one figure over all runs.\n\n"
    md += table(order, out, runs) + "\n"
    for against in ["FIFO", "Static"]:
        if against in out:
            md += changes(order, out, against) + "\n"
    md += ("ThemisIO (SC23, published): 13.5–13.7% more throughput and 19.5–40.4% less "
           "performance variation than FIFO, TBF and GIFT.\n")
    with open(os.path.join(args.out, "runs.md"), "w") as f:
        f.write(md)
    svg(order, out, os.path.join(args.out, "comparison.svg"),
        f"{runs[0]['scenario']}: {len(runs)} runs, 64 MiB/s shared by six bursty jobs")
    print(md)


if __name__ == "__main__":
    main()
