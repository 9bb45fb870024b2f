#!/usr/bin/env python3
"""Summarizes measure.sh's runs.csv as markdown: mean ± sample std over runs, min–max."""

import csv
import statistics as st
import sys
from collections import defaultdict


def stats(xs):
    xs = [float(x) for x in xs]
    m = st.mean(xs)
    s = st.stdev(xs) if len(xs) > 1 else 0.0
    return m, s, min(xs), max(xs)


def fmt(xs, unit=""):
    m, s, lo, hi = stats(xs)
    cv = 100 * s / m if m else 0
    return f"{m:.0f}{unit} ± {s:.0f} (cv {cv:.1f}%, {lo:.0f}–{hi:.0f})"


def roles(by_run):
    """Per run: the victim's row, its rate, and the aggressors' total rate."""
    victim = [next(r for r in rs if r["role"] == "victim") for rs in by_run.values()]
    v = [float(r["rate"]) for r in victim]
    agg = [sum(float(r["rate"]) for r in rs if r["role"] == "aggressor") for rs in by_run.values()]
    return victim, v, agg


def beside(runs, kind):
    """Each count of aggressors of runs of KIND, fewest first: the count, the victim's
    rows, its rates, the aggressors' totals, and its mean rate alone (None without a
    clean run alone)."""
    alone = None
    for n in sorted(n for k, n in runs if k == kind):
        victim, v, agg = roles(runs[(kind, n)])
        if n == 0:
            alone = st.mean(v)
        yield n, victim, v, agg, alone


def main(path):
    rows = list(csv.DictReader(open(path)))
    # Runs during which other people's processes took over 30% of a core are left out.
    dirty = {(r["kind"], r["run"], r["aggressors"]) for r in rows
             if r["others_cpu_pct"] and float(r["others_cpu_pct"]) > 30}
    left_out = sorted(dirty)
    rows = [r for r in rows if (r["kind"], r["run"], r["aggressors"]) not in dirty]
    # (kind, aggressors) -> run -> rows
    runs = defaultdict(lambda: defaultdict(list))
    for r in rows:
        runs[(r["kind"], int(r["aggressors"]))][int(r["run"])].append(r)

    print("# Victim beside aggressors on the GlusterFS volume (no control)\n")
    print("Victim: one `sluice load --ops getattr` process (uncached stat of its own file).")
    print("Aggressors: `sluice load --ops mknod,unlink` processes (create + unlink loop).")
    print("mean ± sample std over runs (coefficient of variation, min–max). CPU % is of one")
    print("core (the machine has 2); others' CPU is what processes outside the experiment took")
    print("during the run (the machine is shared).\n")
    print("| aggressors | victim stat/s | drop vs alone | aggressors' ops/s (total) "
          "| volume ops/s (victim + aggressors) | brick CPU % | FUSE client CPU % | others' CPU % |")
    print("|---|---|---|---|---|---|---|---|")
    for n, victim, v, agg, alone in beside(runs, "rate"):
        total = [a + b for a, b in zip(v, agg)]
        if n == 0:
            drop = "—"
        elif alone is None:
            drop = "n/a (no clean run alone)"
        else:
            drops = [100 * (1 - x / alone) for x in v]
            drop = f"{st.mean(drops):.1f}% ({min(drops):.1f}–{max(drops):.1f})"
        bcpu = [float(r["brick_cpu_pct"]) for r in victim]
        ccpu = [float(r["client_cpu_pct"]) for r in victim]
        oth = [float(r["others_cpu_pct"]) for r in victim]
        print(f"| {n} | {fmt(v)} | {drop} | {fmt(agg) if n else '—'} | {fmt(total)} "
              f"| {st.mean(bcpu):.0f} | {st.mean(ccpu):.0f} | {max(oth):.0f} (max) |")

    print("\n## Victim latency (mdprobe: stat of its own 16 files, every call timed)\n")
    print("| aggressors | victim stat/s | p50 µs | p99 µs | aggressors' ops/s (total) | others' CPU % |")
    print("|---|---|---|---|---|---|")
    for n, victim, v, agg, alone in beside(runs, "latency"):
        extra = f" (−{100 * (1 - st.mean(v) / alone):.1f}%)" if n and alone is not None else ""
        print(f"| {n} | {fmt(v)}{extra} | {fmt([r['p50_us'] for r in victim])} "
              f"| {fmt([r['p99_us'] for r in victim])} | {fmt(agg) if n else '—'} "
              f"| {max(float(r['others_cpu_pct']) for r in victim):.0f} (max) |")

    if left_out:
        print("\nLeft out (others took over 30% of a core even on the retry): "
              + ", ".join(f"{k} run {r} with {n} aggressor(s)" for k, r, n in left_out))

    print("\n## Capacity: K processes of one kind together (one run each)\n")
    print("| load | processes | total ops/s | per process | brick CPU % | FUSE client CPU % | others' CPU % |")
    print("|---|---|---|---|---|---|---|")
    for (kind, k), by_run in sorted(runs.items()):
        if not kind.startswith("capacity"):
            continue
        rs = by_run[1]
        total = sum(float(r["rate"]) for r in rs)
        print(f"| {kind.removeprefix('capacity-')} | {k} | {total:.0f} | {total / k:.0f} "
              f"| {rs[0]['brick_cpu_pct']} | {rs[0]['client_cpu_pct']} | {rs[0]['others_cpu_pct']} |")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "results/runs.csv")
