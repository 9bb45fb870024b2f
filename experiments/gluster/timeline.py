#!/usr/bin/env python3
"""The auto-capacity timeline of protect.sh: per-second CSV, a PNG and findings (markdown).

usage: timeline.py RAW_DIR OUT.csv OUT.png SETUP   (env: T0, TARGET_MS, OTHERS)

RAW_DIR holds victim.sec (mdprobe -s lines), samples.jsonl (`sluice pool list` and
`sluice jobs` once a second) and agg.{a,b}.N (`sluice load --csv`) with agg.*.t0 (start).
"""
import csv
import glob
import json
import math
import os
import re
import statistics as st
import sys


def rate_of(text):
    """'auto 1.4k/s' or '950/s' -> float per second."""
    m = re.search(r"([0-9.]+)\s*([kKMG]?)", text or "")
    if not m:
        return math.nan
    return float(m.group(1)) * {"": 1, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9}[m.group(2)]


def main(raw, out_csv, out_png, setup):
    t0 = float(os.environ["T0"])
    target_ms = float(os.environ["TARGET_MS"])
    watch = os.environ.get("WATCH", "")
    watched = f"its watch, {watch}" if watch else "every call of the pool, all jobs"
    rows = {}

    def row(sec):
        return rows.setdefault(sec, {"t": sec})

    for line in open(os.path.join(raw, "victim.sec")):
        if not line.startswith("sec="):
            continue
        kv = dict(x.split("=") for x in line.split())
        sec = int(round(float(kv["t"]) - t0))
        r = row(sec)
        r["victim_rate"] = int(kv["calls"])
        r["victim_p99_ms"] = float(kv["p99_us"]) / 1000 if int(kv["calls"]) else math.nan
    for line in open(os.path.join(raw, "samples.jsonl")):
        try:
            s = json.loads(line)
        except json.JSONDecodeError:
            continue
        sec = int(round(s["t"] - t0))
        p = s.get("pool") or {}
        r = row(sec)
        cap = rate_of(p.get("capacity"))
        r["capacity"] = cap
        r["pool_p99_ms"] = (p.get("latency_p99_s") or 0) * 1000 or math.nan
        r["used"] = p.get("used", math.nan)
        for j in s.get("jobs") or []:
            if j.get("job") == "victim":
                r["victim_allocation"] = j.get("a")
    agg = {}
    for f in glob.glob(os.path.join(raw, "agg.*.*")):
        if f.endswith(".t0"):
            continue
        start = float(open(f + ".t0").read())
        for line in open(f):
            parts = line.strip().split(",")
            if len(parts) == 2 and parts[0].isdigit():
                sec = int(round(start + int(parts[0]) - t0))
                agg[sec] = agg.get(sec, 0) + int(parts[1])
    for sec, v in agg.items():
        row(sec)["aggressors_rate"] = v
    for r in rows.values():
        # a second with no aggressor line is a second without aggressors
        r.setdefault("aggressors_rate", 0)
    cols = ["t", "capacity", "used", "pool_p99_ms", "target_ms", "victim_rate",
            "victim_p99_ms", "victim_allocation", "aggressors_rate"]
    secs = sorted(s for s in rows if 0 <= s <= 200)
    with open(out_csv, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(cols)
        for s in secs:
            r = rows[s]
            r["target_ms"] = target_ms
            w.writerow(["" if (isinstance(r.get(c), float) and math.isnan(r[c])) or r.get(c) is None
                        else (round(r[c], 3) if isinstance(r[c], float) else r[c]) for c in cols])

    def series(c):
        return [rows[s].get(c, math.nan) for s in secs]

    def window(c, a, b):
        xs = [rows[s].get(c) for s in secs if a <= s < b]
        return [x for x in xs if x is not None and not (isinstance(x, float) and math.isnan(x))]

    def med(xs):
        return st.median(xs) if xs else math.nan

    # findings
    end = max(secs) if secs else 0
    phases = [("victim alone", 0, 10), ("aggressors (1st)", 10, 50), ("victim alone again", 50, 70),
              ("aggressors (2nd)", 70, end + 1)]
    print(f"Timeline ({setup}): target p99 {target_ms:g} ms over {watched}; others' CPU during it "
          f"{os.environ.get('OTHERS', '?')}% of a core.\n")
    print("| phase | seconds | capacity (median; range) | pool p99 ms (median) | victim stat/s (median) "
          "| victim p99 ms (median) | aggressors ops/s (median) |")
    print("|---|---|---|---|---|---|---|")
    for name, a, b in phases:
        caps = window("capacity", a, b)
        print(f"| {name} | {a}–{min(b, end)} | {med(caps):.0f} ({min(caps, default=math.nan):.0f}–"
              f"{max(caps, default=math.nan):.0f}) | {med(window('pool_p99_ms', a, b)):.2f} | "
              f"{med(window('victim_rate', a, b)):.0f} | {med(window('victim_p99_ms', a, b)):.2f} | "
              f"{med(window('aggressors_rate', a, b)):.0f} |")

    def settle(a, b):
        """First second in [a, b) after which the capacity stays within ±15% of its median
        over the last 15 s of the phase."""
        ref = med(window("capacity", max(a, b - 15), b))
        caps = [(s, rows[s].get("capacity")) for s in secs if a <= s < b]
        caps = [(s, c) for s, c in caps if c is not None and not math.isnan(c)]
        for k, (s, _) in enumerate(caps):
            if all(abs(c - ref) <= 0.15 * ref for _, c in caps[k:]):
                return s - a, ref
        return math.nan, ref

    def settle_mean(a, b, span=10):
        """The same for the capacity's moving mean over `span` seconds: AIMD saws by design
        (a cut takes 30%, a step adds a tenth of the start), and what a job gets over a few
        seconds is the mean."""
        caps = [(s, rows[s].get("capacity")) for s in secs if a <= s < b]
        caps = [(s, c) for s, c in caps if c is not None and not math.isnan(c)]
        means = [(s, st.mean(c for t, c in caps if s - span < t <= s)) for s, _ in caps
                 if s - span >= a]
        if not means:
            return math.nan, math.nan
        ref = means[-1][1]
        for k, (s, _) in enumerate(means):
            if all(abs(m - ref) <= 0.15 * ref for _, m in means[k:]):
                return s - a, ref
        return math.nan, ref

    print()
    for name, a, b in phases[1:]:
        s, ref = settle(a, min(b, end + 1))
        sm, refm = settle_mean(a, min(b, end + 1))
        print(f"- {name}: the capacity settles {s:.0f} s after the change, at about {ref:.0f}/s "
              f"(within ±15% from then to the end of the phase); its 10-s mean settles {sm:.0f} s "
              f"after the change, at about {refm:.0f}/s.")
    tail = window("victim_p99_ms", 30, 50) + window("victim_p99_ms", 80, end + 1)
    ptail = window("pool_p99_ms", 30, 50) + window("pool_p99_ms", 80, end + 1)
    if tail:
        within = sum(1 for x in tail if x <= target_ms) / len(tail)
        print(f"- Settled, with aggressors (30–50 s and 80 s–end): victim p99 per second median "
              f"{med(tail):.2f} ms, ≤ target in {100 * within:.0f}% of the seconds; the pool's p99 "
              f"({watched}) median {med(ptail):.2f} ms.")

    # plot
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(10, 7), sharex=True)
    for ax in (ax1, ax2):
        ax.axvspan(10, 50, color="tab:red", alpha=0.08, lw=0)
        ax.axvspan(70, end, color="tab:red", alpha=0.08, lw=0)
    ax1.plot(secs, series("capacity"), label="pool capacity (auto)", color="black", lw=2)
    ax1.plot(secs, series("used"), label="pool used", color="gray", lw=1, ls="--")
    ax1.plot(secs, series("victim_rate"), label="victim stat/s", color="tab:blue")
    ax1.plot(secs, [rows[s].get("aggressors_rate", 0) for s in secs],
             label="aggressors ops/s (4 together)", color="tab:red")
    ax1.set_ylabel("calls / s")
    ax1.legend(loc="upper right", fontsize=8)
    ax1.set_title(f"GlusterFS metadata pool, capacity = \"auto\" ({setup}); shaded: 4 aggressors")
    ax2.plot(secs, series("pool_p99_ms"), label=f"pool p99 (sampled: {watched})", color="black")
    ax2.plot(secs, series("victim_p99_ms"), label="victim p99 (mdprobe, each second)", color="tab:blue")
    ax2.axhline(target_ms, color="tab:green", ls="--", label=f"target {target_ms:g} ms")
    ax2.set_ylabel("ms")
    ax2.set_xlabel("seconds")
    ax2.set_ylim(0, max(4 * target_ms, 1))
    ax2.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    fig.savefig(out_png, dpi=110)
    print(f"\nPlot: {os.path.basename(out_png)}; per-second data: {os.path.basename(out_csv)}.")


if __name__ == "__main__":
    main(*sys.argv[1:5])
