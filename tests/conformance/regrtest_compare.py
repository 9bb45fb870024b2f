"""Compares two runs of CPython's regrtest: a baseline and one under the sluice stage.

Per test module: the module's result (regrtest's progress line: passed, failed, env
changed, crashed, ...) and the outcome of every test case (from --junit-xml: passed,
failed, error, skipped) must be the same in both runs. A test failing in both runs is
reported but is not a difference. Also checks the stage's --stats: it must have counted
real traffic (more than MIN_CALLS managed calls, all admitted by the catch-all rule) and
seen the tests create and remove temporary directories.

Usage: regrtest_compare.py WORK MODULE...   (WORK holds {base,stage}.{xml,log}, stats.json)
Prints a report; the last line is `checks: N passed, M failed`.
"""

import json
import os
import re
import sys
import xml.etree.ElementTree as ET
from collections import Counter

MIN_CALLS = 10_000

PROGRESS = re.compile(r"\[\s*\d+/\d+(?:/\d+)?\] (test_\w+) (.*)$")
RESULTS = ("passed", "failed", "skipped", "resource denied", "crashed", "timed out",
           "interrupted", "ran no tests", "uncaught exception", "did not run")


def module_results(log_path):
    """{module: result} from regrtest's progress lines."""
    out = {}
    try:
        text = open(log_path, errors="replace").read()
    except OSError:
        return out
    for line in text.splitlines():
        m = PROGRESS.search(line)
        if not m:
            continue
        rest = m.group(2).split(" -- ")[0]
        res = next((r for r in RESULTS if rest.startswith(r)), rest.strip())
        if "env changed" in rest:
            res = "env changed"
        out[m.group(1)] = res
    return out


def case_outcomes(xml_path):
    """{case name: (outcome, message)} from regrtest's junit XML."""
    out = {}
    try:
        root = ET.parse(xml_path).getroot()
    except (OSError, ET.ParseError) as e:
        print(f"  cannot read {os.path.basename(xml_path)}: {e}")
        return out
    for case in root.iter("testcase"):
        outcome, msg = "passed", ""
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = {"failure": "failed", "error": "error", "skipped": "skipped"}[child.tag]
                msg = (child.get("message") or child.text or "").strip().splitlines()
                msg = msg[-1] if msg else ""
                break
        name = case.get("name", "?")
        if name in out:  # a repeated name: keep the worse outcome
            if out[name][0] in ("passed", "skipped"):
                out[name] = (outcome, msg)
        else:
            out[name] = (outcome, msg)
    return out


def in_module(name, module):
    return name.startswith(f"test.{module}.") or name.startswith(f"{module}.")


def main():
    work, modules = sys.argv[1], sys.argv[2:]
    base_mod = module_results(os.path.join(work, "base.log"))
    stage_mod = module_results(os.path.join(work, "stage.log"))
    base = case_outcomes(os.path.join(work, "base.xml"))
    stage = case_outcomes(os.path.join(work, "stage.xml"))
    passed = failed = 0

    print(f"  {'module':<14} {'baseline':<12} {'staged':<12} cases  pass  skip  fail  differences")
    for mod in modules:
        b = {k: v for k, v in base.items() if in_module(k, mod)}
        s = {k: v for k, v in stage.items() if in_module(k, mod)}
        diffs = []
        for name in sorted(set(b) | set(s)):
            bo = b.get(name, ("missing", ""))
            so = s.get(name, ("missing", ""))
            if bo[0] != so[0]:
                diffs.append((name, bo, so))
        both_failed = sorted(n for n in set(b) & set(s)
                             if b[n][0] in ("failed", "error") and s[n][0] in ("failed", "error"))
        bm, sm = base_mod.get(mod, "no result"), stage_mod.get(mod, "no result")
        c = Counter(o for o, _ in s.values())
        same = not diffs and bm == sm and bm != "no result" and bool(b)
        print(f"  {mod:<14} {bm:<12} {sm:<12} {len(s):>5} {c['passed']:>5} {c['skipped']:>5} "
              f"{c['failed'] + c['error']:>5}  {len(diffs)}")
        if bm != sm or bm == "no result":
            print(f"    DIFF module result: baseline '{bm}' / staged '{sm}'")
        if not b:
            print("    no test case of this module in the baseline's junit XML")
        for name, bo, so in diffs:
            print(f"    DIFF {name}: baseline {bo[0]}{' (' + bo[1][:100] + ')' if bo[1] else ''}"
                  f" / staged {so[0]}{' (' + so[1][:160] + ')' if so[1] else ''}")
        for name in both_failed:
            print(f"    fails in both runs (not a difference): {name}: {b[name][1][:120]}")
        if same:
            passed += 1
        else:
            failed += 1
            print(f"    FAIL {mod}: staged run differs from the baseline")

    # The stage really intercepted.
    try:
        st = json.load(open(os.path.join(work, "stats.json")))
        calls = sum(v["calls"] for v in st["ops"].values())
        admitted = sum(r["admitted"] for r in st["rules"])
        unmanaged = st["unmanaged"]
        ops = {k: v["calls"] for k, v in st["ops"].items()}
    except (OSError, ValueError, KeyError) as e:
        print(f"  FAIL stats: cannot read the stage's --stats: {e}")
        failed += 1
    else:
        top = ", ".join(f"{k} {v}" for k, v in sorted(ops.items(), key=lambda kv: -kv[1]) if v)
        print(f"  stage counted {calls + unmanaged} calls: {calls} on managed paths "
              f"(admitted by the rule: {admitted}), {unmanaged} on unmanaged targets "
              f"(pipes, sockets, /dev, /proc, ...)")
        print(f"  managed calls by operation: {top}")
        tmp_ok = all(ops.get(k, 0) > 0 for k in ("mkdir", "rmdir", "unlink"))
        if calls > MIN_CALLS and admitted > MIN_CALLS and tmp_ok:
            passed += 1
            print(f"  ok: more than {MIN_CALLS} managed calls, and the tests' temporary files and "
                  f"directories were managed (mkdir {ops['mkdir']}, rmdir {ops['rmdir']}, unlink {ops['unlink']})")
        else:
            failed += 1
            print(f"  FAIL stats: expected more than {MIN_CALLS} managed and admitted calls and "
                  f"some mkdir/rmdir/unlink (got {calls} managed, {admitted} admitted)")

    print(f"checks: {passed} passed, {failed} failed")


if __name__ == "__main__":
    main()
