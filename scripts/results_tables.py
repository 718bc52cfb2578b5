#!/usr/bin/python3
"""Print the markdown tables of docs/results.md from the JSON files in docs/results/.

    scripts/results_tables.py [docs/results]

Every number in the results document comes from here, so it always matches the runs."""
import json
import os
import sys

DIR = sys.argv[1] if len(sys.argv) > 1 else "docs/results"


def load(name):
    path = os.path.join(DIR, name + ".json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def last(run):
    return run["records"][-1]


def describe(cfg):
    a, c = cfg["algorithm"], cfg["compressor"]
    comp = c["name"]
    if comp in ("topk", "randk"):
        comp += f" {100 * c['ratio']:g}%"
    elif comp == "qsgd":
        comp += f" s={c['levels']}" + (f" block {c['block']}" if c.get("block") else "")
    elif comp == "lead":
        comp += f" {c['bits']}-bit"
    return a["name"], comp


def convex_table(names):
    print("| run | algorithm | compressor | estimator | rounds | max rel. error to x* | MB sent |")
    print("|---|---|---|---|---|---|---|")
    for n in names:
        r = load(n)
        if not r:
            continue
        alg, comp = describe(r["config"])
        x = last(r)
        print(f"| {n} | {alg} | {comp} | {r['config']['algorithm']['estimator']} | {x['round']} | "
              f"{x.get('rel_error', float('nan')):.1e} | {x['bytes_sent'] / 1e6:.2f} |")


def fmnist_table(prefix):
    base = load(prefix + "_dpsgd")
    print("| run | algorithm | compressor | test accuracy | node acc. min-max | MB sent | bytes vs D-PSGD |")
    print("|---|---|---|---|---|---|---|")
    for suffix in ("central", "dpsgd", "deepsqueeze_topk", "choco_topk", "deepsqueeze_q4", "choco_q4"):
        r = load(f"{prefix}_{suffix}")
        if not r:
            continue
        alg, comp = describe(r["config"])
        if suffix == "central":
            alg, comp = "centralized (1 node, batch 512)", "-"
        x = last(r)
        ratio = "-"
        if base and x["bytes_sent"] and suffix not in ("central", "dpsgd"):
            ratio = f"{last(base)['bytes_sent'] / x['bytes_sent']:.1f}x fewer"
        print(f"| {prefix}_{suffix} | {alg} | {comp} | {100 * x['accuracy']:.2f}% | "
              f"{100 * x['node_accuracy_min']:.1f}-{100 * x['node_accuracy_max']:.1f}% | "
              f"{x['bytes_sent'] / 1e6:.1f} | {ratio} |")


def scale_table():
    print("| graph | nodes | rounds | wall time | peak memory | final test accuracy |")
    print("|---|---|---|---|---|---|")
    for topo in ("exponential", "random_regular"):
        r = load("scale_" + topo)
        tpath = os.path.join(DIR, f"scale_{topo}.time")
        if not r or not os.path.exists(tpath):
            continue
        timing = open(tpath).read().strip().splitlines()[-1]  # "wall X s, peak RSS Y KiB"
        wall = float(timing.split()[1])
        rss = int(timing.split()[5]) / 1024 / 1024
        x = last(r)
        print(f"| {topo} | {x['alive']} | {x['round']} | {wall:.0f} s | {rss:.2f} GiB | {100 * x['accuracy']:.1f}% |")


if __name__ == "__main__":
    print("### Exactness (L1 logistic, 8-node ring)\n")
    convex_table(["exact_prox_lead_full", "exact_prox_lead_lsvrg", "exact_prox_lead_saga", "exact_prox_lead_sgd"])
    print("\n### Smooth logistic, constant step\n")
    convex_table(["smooth_nids", "smooth_lead", "smooth_dpsgd", "smooth_choco", "smooth_deepsqueeze"])
    print("\n### Churn\n")
    convex_table(["churn_prox_lead", "churn_join_prox_lead"])
    for p in ("fmnist", "mlp"):
        print(f"\n### Fashion-MNIST {p}\n")
        fmnist_table(p)
    print("\n### Scale\n")
    scale_table()
