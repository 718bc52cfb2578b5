#!/usr/bin/env python3
"""Compares the final records of sim result files against a reference directory (docs/results by default).

  scripts/compare_results.py NEW_DIR [--ref docs/results] [NAME...]

For each NAME.json present in both directories, prints the final round's rel_error, accuracy, loss and
bytes_sent side by side and whether they are identical. Exit code 0 always: this reports, it does not judge.
"""
import argparse
import json
import pathlib

KEYS = ["rel_error", "accuracy", "loss", "bytes_sent", "alive"]


def final(path):
    return json.loads(path.read_text())["records"][-1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("new_dir")
    ap.add_argument("--ref", default="docs/results")
    ap.add_argument("names", nargs="*")
    a = ap.parse_args()
    new, ref = pathlib.Path(a.new_dir), pathlib.Path(a.ref)
    names = a.names or sorted(p.stem for p in new.glob("*.json"))
    print("| run | key | reference | new | same |")
    print("|---|---|---|---|---|")
    for n in names:
        p, q = ref / f"{n}.json", new / f"{n}.json"
        if not (p.exists() and q.exists()):
            print(f"| {n} | - | {'ok' if p.exists() else 'missing'} | {'ok' if q.exists() else 'missing'} | |")
            continue
        r, s = final(p), final(q)
        for k in KEYS:
            if k in r or k in s:
                x, y = r.get(k), s.get(k)
                print(f"| {n} | {k} | {x} | {y} | {'yes' if x == y else 'NO'} |")


if __name__ == "__main__":
    main()
