#!/usr/bin/env python3
"""Fails when a doctest TEST_CASE name holds ',' or ';'.

ctest runs each test case as `binary --test-case=NAME`. doctest splits that filter at commas and CMake
splits the discovered name at semicolons, so such a test case matched nothing: the entry ran zero test
cases and passed (67 entries did, until this check). Usage: check_test_names.py DIR (searched for *.cc).
"""
import pathlib
import re
import sys

PATTERN = re.compile(r'TEST_CASE\(\s*"((?:[^"\\]|\\.)*)"')


def main() -> int:
    bad = []
    for path in sorted(pathlib.Path(sys.argv[1]).rglob("*.cc")):
        for lineno, line in enumerate(path.read_text().splitlines(), 1):
            for m in PATTERN.finditer(line):
                if "," in m.group(1) or ";" in m.group(1):
                    bad.append(f"{path}:{lineno}: {m.group(1)}")
    for b in bad:
        print(f"test case name with ',' or ';' (ctest would run none of it): {b}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
