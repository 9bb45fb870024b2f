#!/usr/bin/env python3
"""protect.sh's protect.csv (and the timeline's findings) as markdown.

usage: protect_summary.py protect.csv [timeline-summary.md]
"""
import csv
import os
import sys

WHAT = {
    "alone": "victim alone (bare mdprobe)",
    "none": "4 aggressors, no control",
    "static": "static rule on each aggressor (`class=metadata,directory rate={agg}/s`, standalone)",
    "pool": "pool {algo}, capacity {cap}/s; victim limit {res}/s",
    "pool-lim": "pool {algo}, capacity {cap}/s; victim limit {res}/s, each aggressor limit {agg}/s",
    "auto": "pool {algo}, capacity auto (target {tgt} ms); victim limit {res}/s",
    "auto-lim": "pool {algo}, capacity auto (target {tgt} ms); victim limit {res}/s, each aggressor limit {agg}/s",
}


def main(path, timeline=None):
    rows = list(csv.DictReader(open(path)))
    cap = os.environ.get("CAPACITY", "?")
    print("# Victim protected on the GlusterFS volume (protect.sh)\n")
    print(f"Victim: mdprobe (closed-loop uncached stat, every call timed, {os.environ.get('SECS', '20')} s; "
          f"alone {os.environ.get('ALONE_SECS', '15')} s). Aggressors: {os.environ.get('AGGS', '4')} × "
          "`sluice load --ops mknod,unlink`. The pool matches `class=metadata,directory` on the "
          "mount (mknod is class `directory`). % of alone is the victim's whole-run rate; "
          "'steady' leaves out its first 2 s (the controller's first cycles). CPU in % of one "
          "core (2 cores); others' CPU is what processes outside the experiment took.\n")
    print("| set-up | victim stat/s | steady | % of alone | p50 ms | p99 ms | aggressors ops/s (total; each) "
          "| pool capacity at end | pool p99 at end ms | brick CPU | FUSE client CPU | others' CPU |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        what = WHAT.get(r["setup"], r["setup"]).format(cap=cap, res=r["reserve"], agg=r["agg_rate"],
                                                        tgt=r["target_ms"], algo=r.get("algorithm", "reservations"))
        ms = lambda us: f"{float(us) / 1000:.2f}" if us else ""
        aggs = f"{r['aggressors_total_rate']} ({r['aggressor_rates']})" if r["aggressor_rates"] else "—"
        print(f"| {what} | {r['victim_rate']} | {r['victim_steady_rate']} | {r['pct_of_alone']}% | "
              f"{ms(r['p50_us'])} | {ms(r['p99_us'])} | {aggs} | {r['pool_capacity_end'] or '—'} | "
              f"{r['pool_p99_end_ms'] or '—'} | {r['brick_cpu_pct']}% | {r['client_cpu_pct']}% | "
              f"{r['others_cpu_pct']}% |")
    if timeline and os.path.exists(timeline):
        print("\n## Timeline\n")
        print(open(timeline).read())


if __name__ == "__main__":
    main(*sys.argv[1:])
