#!/usr/bin/env python3
"""Seconds per test binary of a nextest run, from its JUnit file, so that
CI shows at each landing which binary grew.

Usage: scripts/test-times.py [JUNIT_XML]  (default target/nextest/default/junit.xml)

A binary's seconds are the sum of its tests' times; tests of different
binaries overlap, so the sum over binaries exceeds the run's wall time,
which the last line gives."""

import sys
import xml.etree.ElementTree as ET


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "target/nextest/default/junit.xml"
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as e:
        print(f"test-times.py: {path}: {e}", file=sys.stderr)
        return 2
    rows = []
    for suite in root.iter("testsuite"):
        cases = suite.findall("testcase")
        times = [(float(c.get("time", "0")), c.get("name", "")) for c in cases]
        failed = sum(1 for c in cases if c.find("failure") is not None or c.find("error") is not None)
        longest = max(times, default=(0.0, ""))
        rows.append((sum(t for t, _ in times), suite.get("name", "?"), len(cases), failed, longest))
    rows.sort(reverse=True)
    width = max([len(r[1]) for r in rows] + [len("binary")])
    print(f"{'binary':<{width}}  {'tests':>5}  {'failed':>6}  {'seconds':>8}  longest test")
    for seconds, name, count, failed, (longest, test) in rows:
        print(f"{name:<{width}}  {count:>5}  {failed:>6}  {seconds:>8.1f}  {longest:.1f} s {test}")
    total = sum(r[2] for r in rows)
    print(f"{'all':<{width}}  {total:>5}  {sum(r[3] for r in rows):>6}  {sum(r[0] for r in rows):>8.1f}"
          f"  wall {float(root.get('time', '0')):.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
