#!/usr/bin/env python3
"""Regenerates the degree / spectral-gap table in docs/topologies.md from `gossipd topo --json`.

usage: scripts/topology_table.py [GOSSIPD] [--update docs/topologies.md]

Without --update the markdown table is printed; with it, the text between the
<!-- topology-table:begin --> and <!-- topology-table:end --> markers is replaced.
Standard library only (no numpy): every number comes from the gossipd binary.
"""
import json
import os
import subprocess
import sys
import tempfile

SIZES = (16, 64)
BEGIN, END = "<!-- topology-table:begin -->", "<!-- topology-table:end -->"

# (label, gossipd flags). Metropolis weights unless the exponential graphs' own weights apply.
ROWS = [
    ("ring", ["--topology", "ring"]),
    ("ring, extra 1", ["--topology", "ring", "--extra", "1"]),
    ("grid", ["--topology", "grid"]),
    ("torus", ["--topology", "torus"]),
    ("random-regular d=4", ["--topology", "random-regular", "--degree", "4", "--seed", "1"]),
    ("erdos-renyi p=2ln(n)/n", ["--topology", "erdos-renyi", "--seed", "1"]),
    ("exponential (uniform 1/(tau+1))", ["--topology", "exponential"]),
    ("exponential, symmetrised + metropolis", ["--topology", "exponential", "--weights", "metropolis"]),
    ("one-peer-exponential, round 0", ["--topology", "one-peer-exponential"]),
    ("complete", ["--topology", "complete"]),
    ("star", ["--topology", "star"]),
    ("edge-list (hypercube file)", ["--topology", "edge-list", "--edges", "{cube}"]),
]


def hypercube_file(n, directory):
    path = os.path.join(directory, f"hypercube{n}.txt")
    bits = n.bit_length() - 1
    with open(path, "w") as f:
        f.write(f"# {bits}-dimensional hypercube\n")
        for i in range(n):
            for b in range(bits):
                if i < i ^ (1 << b):
                    f.write(f"{i} {i ^ (1 << b)}\n")
    return path


def run(gossipd, flags, n):
    out = subprocess.run([gossipd, "topo", "--nodes", str(n), "--json"] + flags,
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def cell(d):
    lo, hi = d["mixing_degree"]["min"], d["mixing_degree"]["max"]
    deg = str(lo) if lo == hi else f"{lo}-{hi}"
    gap = f"{d['spectrum']['gap']:.4f}"
    if "period" in d:
        gap += f" ({d['period']['rounds']} rounds: {d['period']['gap']:.4f})"
    return deg, gap


def table(gossipd):
    head = "| topology | " + " | ".join(f"degree n={n} | gap n={n}" for n in SIZES) + " |"
    lines = [head, "|" + "---|" * (1 + 2 * len(SIZES))]
    with tempfile.TemporaryDirectory() as tmp:
        for label, flags in ROWS:
            cells = []
            for n in SIZES:
                fl = [f.replace("{cube}", hypercube_file(n, tmp)) for f in flags]
                cells.extend(cell(run(gossipd, fl, n)))
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv):
    args = argv[1:]
    target = None
    if "--update" in args:
        i = args.index("--update")
        target = args[i + 1]
        del args[i:i + 2]
    gossipd = args[0] if args else "build/release/daemon/gossipd"
    text = table(gossipd)
    if target is None:
        print(text)
        return 0
    with open(target) as f:
        doc = f.read()
    start, stop = doc.index(BEGIN) + len(BEGIN), doc.index(END)
    with open(target, "w") as f:
        f.write(doc[:start] + "\n" + text + "\n" + doc[stop:])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
