#!/usr/bin/env python3
"""Aggregates experiments/cephfs/results/{solo,run}N/summary.md: per set-up, the victim's
settled calls/s as % of the same run's solo and of the run's 'Aggressors held' set-up,
MDS figures; mean and spread (min-max) over the runs.

usage: aggregate.py [RESULTS_DIR [FIRST-LAST]]  (FIRST-LAST: only runs FIRST to LAST)"""
import re, sys, statistics as st, glob, os
root = sys.argv[1] if len(sys.argv) > 1 else 'experiments/cephfs/results'
if len(sys.argv) > 2:
    span = re.fullmatch(r'(\d+)-(\d+)', sys.argv[2])
    if not span:
        sys.exit(f"aggregate.py: runs are FIRST-LAST (e.g. 1-10), not '{sys.argv[2]}'")
    first, last = int(span.group(1)), int(span.group(2))
else:
    first, last = 0, float('inf')
def mds_table(path):
    rows = {}
    for line in open(path):
        if not line.startswith('| ') or line.startswith('| set-up') or line.startswith('|---'):
            continue
        cells = [c.strip() for c in line.strip().strip('|').split('|')]
        if len(cells) != 8 or not cells[1].startswith(('victim', 'aggr')):
            continue
        jobs = dict((k, float(v)) for k, v in (re.match(r'(\S+) (\S+)', j).groups() for j in cells[1].split(', ')))
        within = re.match(r'(\d+)%', cells[6])
        rows[cells[0]] = dict(jobs=jobs, req=float(cells[2]), lat=float(cells[3]), p90=float(cells[4]),
                              q=float(cells[5]), within=float(within.group(1)) if within else None, alloc=cells[7])
    return rows
runs = sorted(int(m) for m in (re.search(r'run(\d+)$', d).group(1) for d in glob.glob(f'{root}/run*') if re.search(r'run\d+$', d)) if os.path.exists(f'{root}/run{m}/summary.md') and first <= int(m) <= last)
per = {}
order = []
for n in runs:
    run = mds_table(f'{root}/run{n}/summary.md')
    if os.path.exists(f'{root}/solo{n}/summary.md'):
        solo = mds_table(f'{root}/solo{n}/summary.md')['Victim alone']
        sv = solo['jobs']['victim']
    else:
        solo, sv = None, None
    ref = run.get('Aggressors held', {}).get('jobs', {}).get('victim')
    target = re.search(r'^Latency target: (.*?)\.?$', open(f'{root}/run{n}/summary.md').read(), re.M)
    print(f'run {n}: MDS target {target.group(1) if target else "–"}; solo victim {sv or 0:.0f}/s; ' + ', '.join(f'{k} {v["jobs"]["victim"]:.0f} ({100*v["jobs"]["victim"]/sv if sv else 0:.0f}% of solo, {100*v["jobs"]["victim"]/ref:.0f}% of held)' for k, v in run.items()))
    if solo: per.setdefault('Victim alone', []).append(dict(solo, pct=100.0, pct_ref=None, aggr=0))
    for k, v in run.items():
        if k not in order: order.append(k)
        aggr = st.mean(x for j, x in v['jobs'].items() if j != 'victim')
        per.setdefault(k, []).append(dict(v, pct=100 * v['jobs']['victim'] / sv if sv else None,
                                         pct_ref=100 * v['jobs']['victim'] / ref if ref else None, aggr=aggr))
def settled(alloc):
    m = re.search(r'\((\d+) s\)', alloc)
    return float(m.group(1)) if m else None
def pct(text):
    return text if text == '–' else text + '%'
def ms(xs):
    xs = [x for x in xs if x is not None]
    if not xs: return '–'
    return f'{st.mean(xs):.0f} ({min(xs):.0f}–{max(xs):.0f})'
print()
print('| set-up | victim calls/s | % of solo | % of aggressors held | each aggressor calls/s | MDS requests/s | MDS reply latency µs (median of seconds) | seconds within the target | allocation settled after (s) | allocated (settled from), per run |')
print('|---|---|---|---|---|---|---|---|---|---|')
for k in ['Victim alone'] + order:
    r = per[k]
    print(f'| {k} | {ms([x["jobs"]["victim"] for x in r])} | {ms([x["pct"] for x in r])}% | {ms([x["pct_ref"] for x in r]) if k!="Victim alone" else "–"}{"%" if k!="Victim alone" else ""} | {ms([x["aggr"] for x in r]) if k!="Victim alone" else "–"} | {ms([x["req"] for x in r])} | {ms([x["lat"] for x in r])} | {pct(ms([x["within"] for x in r]))} | {ms([settled(x["alloc"]) for x in r])} | {"; ".join(x["alloc"] for x in r)} |')
