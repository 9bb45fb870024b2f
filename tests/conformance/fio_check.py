"""Checks one fio --verify job run under a throttling rule.

Usage: fio_check.py NAME UNIT LIMIT RC FIO_JSON FIO_STDERR STATS_JSON
  UNIT is "bytes" (LIMIT in bytes/s; the rule holds data calls by their byte count) or
  "ops" (LIMIT in calls/s; the rule holds write calls).

Checks, each printed as ok/FAIL:
  verify   fio exited 0, reported no error and no verify failure, and read back (verified)
           every byte it wrote;
  held     the rule admitted calls and made them wait (admitted > 0, wait_ns > 0);
  rate     the achieved rate is within TOLERANCE of the limit. While the rule holds fio,
           the achieved rate is what the rule charged over the time fio spent in the held
           phases (from fio's per-phase runtimes):
             bytes: (allocate + write + verify-read bytes charged) / (write + read runtime)
             ops:   write calls / write runtime.
The last line is `checks: N passed, M failed`.
"""

import json
import re
import sys

TOLERANCE = 0.03
MiB = 1 << 20


def main():
    name, unit, limit, rc, fio_json, fio_err, stats_json = sys.argv[1:]
    limit, rc = int(limit), int(rc)
    passed = failed = 0

    def check(ok, what):
        nonlocal passed, failed
        print(f"  {'ok' if ok else 'FAIL'} [{name}] {what}")
        if ok:
            passed += 1
        else:
            failed += 1

    err = open(fio_err, errors="replace").read()
    try:
        fio = json.load(open(fio_json))
        jobs = fio["jobs"]
    except (OSError, ValueError, KeyError) as e:
        fio, jobs = None, []
        print(f"  cannot read fio's JSON output: {e}")
    try:
        st = json.load(open(stats_json))
        rule = st["rules"][0]
    except (OSError, ValueError, KeyError, IndexError) as e:
        st, rule = None, None
        print(f"  cannot read the stage's --stats: {e}")

    # verify
    verify_msgs = [l for l in err.splitlines() if re.search(r"verify|bad magic|bad header|crc|md5", l, re.I)]
    job_errors = [j.get("error", 0) for j in jobs]
    wrote = sum(j["write"]["io_bytes"] for j in jobs)
    read = sum(j["read"]["io_bytes"] for j in jobs)
    check(rc == 0 and jobs and not any(job_errors) and not verify_msgs and wrote > 0 and read == wrote,
          f"fio exit {rc}, job errors {job_errors}, wrote {wrote / MiB:.0f} MiB, verified {read / MiB:.0f} MiB"
          + (f", verify messages: {verify_msgs[:3]}" if verify_msgs else ""))
    for l in err.strip().splitlines()[:10]:
        print(f"    fio stderr: {l}")

    if rule is None or not jobs:
        check(False, "the rule held the I/O (no stats or no fio output)")
        check(False, "achieved rate (no stats or no fio output)")
        return report(passed, failed)

    ops = st["ops"]
    print(f"    rule '{rule['rule']}': admitted {rule['admitted']}, charged {rule['bytes']} B, "
          f"waited {rule['wait_ns'] / 1e9:.2f} s; calls: "
          + ", ".join(f"{k} {v['calls']}" for k, v in ops.items() if v["calls"]))
    check(rule["admitted"] > 0 and rule["wait_ns"] > 0,
          f"the rule held the I/O: admitted {rule['admitted']} > 0, wait {rule['wait_ns']} ns > 0")

    # With several jobs (numjobs) and group_reporting, fio reports one group; runtimes in ms.
    w_rt = max(j["write"]["runtime"] for j in jobs) / 1e3
    r_rt = max(j["read"]["runtime"] for j in jobs) / 1e3
    if unit == "bytes":
        charged = rule["bytes"]
        alloc = ops["allocate"]["bytes"]
        w_rate = (alloc + wrote) / w_rt if w_rt else 0.0
        r_rate = read / r_rt if r_rt else 0.0
        achieved = charged / (w_rt + r_rt) if w_rt + r_rt else 0.0
        print(f"    write phase {w_rt:.2f} s: {(alloc + wrote) / MiB:.0f} MiB charged (allocate {alloc / MiB:.0f} MiB "
              f"+ write {wrote / MiB:.0f} MiB) -> {w_rate / MiB:.2f} MiB/s; verify phase {r_rt:.2f} s: "
              f"{read / MiB:.0f} MiB read -> {r_rate / MiB:.2f} MiB/s")
        what = (f"achieved {achieved / MiB:.2f} MiB/s = {charged / MiB:.0f} MiB / {w_rt + r_rt:.2f} s "
                f"vs limit {limit / MiB:.2f} MiB/s ({100 * (achieved / limit - 1):+.1f}%, tolerance "
                f"±{100 * TOLERANCE:.0f}%)")
    else:
        writes = sum(j["write"]["total_ios"] for j in jobs)
        achieved = writes / w_rt if w_rt else 0.0
        print(f"    write phase {w_rt:.2f} s: {writes} writes by {fio_numjobs(jobs)} job(s) "
              f"({wrote / MiB:.0f} MiB), fsyncs {sum(j['sync']['total_ios'] for j in jobs)}; "
              f"verify phase {r_rt:.2f} s (not held)")
        what = (f"achieved {achieved:.0f} writes/s = {writes} / {w_rt:.2f} s vs limit {limit}/s "
                f"({100 * (achieved / limit - 1):+.1f}%, tolerance ±{100 * TOLERANCE:.0f}%)")
    check(abs(achieved / limit - 1) <= TOLERANCE, what)
    return report(passed, failed)


def fio_numjobs(jobs):
    return sum(int(j.get("job options", {}).get("numjobs", 1)) for j in jobs) if jobs else 0


def report(passed, failed):
    print(f"checks: {passed} passed, {failed} failed")


if __name__ == "__main__":
    main()
