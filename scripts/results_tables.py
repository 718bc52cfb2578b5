#!/usr/bin/python3
"""Print the markdown tables of docs/results.md from the JSON files in docs/results/, or fill them in.

    scripts/results_tables.py                  print every table
    scripts/results_tables.py --fill docs/results.template.md docs/results.md

Every number in the results document comes from here, so it always matches the runs."""
import contextlib
import io
import json
import os
import sys

DIR = "docs/results"


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
    print("| graph | nodes | threads | rounds | wall time | peak memory | MB sent | final test accuracy |")
    print("|---|---|---|---|---|---|---|---|")
    for name in ("scale_exponential", "scale_random_regular", "scale_exponential_t2"):
        r = load(name)
        tpath = os.path.join(DIR, name + ".time")
        if not r or not os.path.exists(tpath):
            continue
        timing = open(tpath).read().strip().splitlines()[-1]  # "wall X s, peak RSS Y KiB"
        wall = float(timing.split()[1])
        rss = int(timing.split()[5]) / 1024 / 1024
        x = last(r)
        cfg = r["config"]
        print(f"| {cfg['cluster']['topology']} | {x['alive']} | {cfg['sim']['threads']} | {x['round']} | {wall:.0f} s | "
              f"{rss:.2f} GiB | {x['bytes_sent'] / 1e6:.0f} | {100 * x['accuracy']:.1f}% |")


def round_table():
    print("| model | message | daemon per round | compute | raw exchange | overhead | transfer ratio | CPU beyond compute |")
    print("|---|---|---|---|---|---|---|---|")
    for name in ("daemon_round", "daemon_round_64mb"):
        r = load(name)
        if not r:
            continue
        ms = lambda v: f"{v:.2f} ms" if v < 10 else f"{v:.0f} ms"
        size = r["message_bytes"]
        msg = f"{size / 1e3:.0f} kB" if size < 1e6 else f"{size / 2**20:.0f} MB"
        print(f"| {r['parameters']:,} parameters | {msg} | {ms(r['daemon_ms_per_round'])} | "
              f"{ms(r['compute_ms_per_round'])} | {ms(r['raw_exchange_ms'])} | {ms(r['overhead_ms'])} | "
              f"{r['transfer_ratio']:.2f} | {ms(r['cpu_overhead_ms'])} |")


def docker_train_table():
    print("| compose file | nodes | rounds | accuracy, first evaluation (mean of nodes) | final (mean) | final, min-max over nodes | false deaths |")
    print("|---|---|---|---|---|---|---|")
    for name in ("docker_train_ring8", "docker_train_grid3x3", "docker_train_random12"):
        r = load(name)
        if not r:
            continue
        print(f"| `{r['file']}` | {r['nodes']} | {r['rounds']:,} | {r['accuracy_first_mean']:.1f}% | "
              f"{r['accuracy_final_mean']:.1f}% | {r['accuracy_final_min']:.1f}-{r['accuracy_final_max']:.1f}% | "
              f"{'-' if r['false_deaths'] is None else r['false_deaths']} |")


def docker_chaos_table():
    # Run 1 gated on the mean of the per-node accuracies (constant step); later runs on the average model
    # (cosine step) and also record the per-node mean.
    print("| run | gate | final accuracy, no faults | with faults | difference | mean of nodes, no faults -> with | "
          "kill detected | cut-off node detected | back after reconnect | restart: back after | graceful stop: leave seen |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    runs = sorted(n[:-5] for n in os.listdir(DIR) if n.startswith("docker_chaos") and n.endswith(".json"))
    for k, name in enumerate(runs, 1):
        r = load(name)
        s = lambda ms: f"{ms / 1000:.1f} s"
        averaged = "mean_node_accuracy_reference" in r
        gate = "average model" if averaged else "mean of nodes"
        means = (f"{r['mean_node_accuracy_reference']:.2f}% -> {r['mean_node_accuracy_chaos']:.2f}%" if averaged
                 else "(the gate)")
        print(f"| {k} | {gate} | {r['accuracy_reference']:.2f}% | {r['accuracy_chaos']:.2f}% | "
              f"{r['accuracy_chaos'] - r['accuracy_reference']:+.2f} | {means} | {s(r['kill_detect_ms'])} | "
              f"{s(r['disconnect_detect_ms'])} | {s(r['reconnect_rejoin_ms'])} | {s(r['restart_back_ms'])} | "
              f"{s(r['stop_leave_seen_ms'])} |")


def http_load_table():
    r = load("http_load")
    if not r:
        return
    print("| window | rounds | ms per round (wall) | CPU ms per round (node 0, all threads) |")
    print("|---|---|---|---|")
    for w in r["windows"]:
        print(f"| {w['window']} | {w['rounds']} | {w['ms_per_round']:.3f} | {w['cpu_ms_per_round']:.3f} |")
    l = r["load"]
    answers = ", ".join(f"{k}: {v}" for k, v in sorted(l["bad_answers"].items()))
    print()
    print(f"Load over the quiet mean: wall time per round x{r['load_over_quiet_ms_per_round']:.2f}, CPU per round "
          f"x{r['load_over_quiet_cpu_ms_per_round']:.2f}; {l['bad_requests']} bad requests in "
          f"{r['window_seconds']:.0f} s ({answers}); {l['idle_opened']} idle connections opened, "
          f"{l['idle_closed_by_server']} closed by the server; {l['slow_readers']} slow readers.")


def bandwidth_table():
    runs = [r for r in (load("bandwidth_tta"), load("bandwidth_tta_eval20")) if r]
    if not runs:
        return
    names = {"dpsgd": "gossipd D-PSGD, fp32", "deepsqueeze": "gossipd DeepSqueeze, top-1%",
             "choco": "gossipd CHOCO-SGD, top-1%", "ddp": "PyTorch DDP, gloo all-reduce (fp32)"}
    print(f"| run | method | time to {100 * runs[0]['target_accuracy']:.0f}% | rounds (DDP: steps) | MB sent, 8 hosts | "
          "speed-up over D-PSGD fp32 | speed-up over DDP |")
    print("|---|---|---|---|---|---|---|")
    for k, r in enumerate(runs, 1):
        by = {x["method"]: x for x in r["runs"]}
        for x in r["runs"]:
            t = f"{x['seconds']:.1f} s" if x["reached"] else f"not reached in {x['seconds']:.0f} s ({100 * x['accuracy']:.1f}%)"
            def vs(m):
                b = by.get(m)
                return f"{b['seconds'] / x['seconds']:.1f}×" if b and b["reached"] and x["reached"] and b is not x else "-"
            print(f"| {k} (eval every {r['eval_every']}) | {names.get(x['method'], x['method'])} | {t} | {x['rounds']} | "
                  f"{x['bytes_sent'] / 1e6:,.0f} | {vs('dpsgd')} | {vs('ddp')} |")


def pytorch_table(suffix="", note=""):
    """The CNN through the trainer bridge (scripts/pytorch_cnn.sh) against torch DDP; suffix "_cosine": the
    runs where both decay their lr on a cosine (LRS=--cosine), "_r3000": 3,000 steps (ROUNDS=3000); note
    is appended to every row's label."""
    ddp = load("pytorch_cnn_ddp" + suffix)
    runs = [(name, load(f"pytorch_cnn_{name}{suffix}"))
            for name in ("dpsgd", "deepsqueeze", "deepsqueeze_eta0.01", "deepsqueeze_eta0.05", "deepsqueeze_k1.5",
                         "deepsqueeze_fc")]
    runs = [(n, r) for n, r in runs if r]
    if not ddp or not runs:
        return
    labels = {"dpsgd": "gossipd D-PSGD, fp32", "deepsqueeze": "gossipd DeepSqueeze, top-1%, η = 0.02",
              "deepsqueeze_eta0.01": "gossipd DeepSqueeze, top-1%, η = 0.01",
              "deepsqueeze_eta0.05": "gossipd DeepSqueeze, top-1%, η = 0.05",
              "deepsqueeze_k1.5": "gossipd DeepSqueeze, top-1.5%, η = 0.02",
              "deepsqueeze_fc": "gossipd DeepSqueeze, top-1%, η = 0.02, last 50 rounds fp32 averaging"}
    ddp_acc, ddp_mb = ddp["final_test_accuracy"], ddp["total_bytes_per_process"] / 1e6
    print("| run | average model | nodes: worst / mean / best | mean node vs DDP | MB sent per node | fewer bytes than DDP |")
    print("|---|---|---|---|---|---|")
    print(f"| PyTorch DDP, gloo (8 processes){note} | {100 * ddp_acc:.2f}% (its one model) | - | - | {ddp_mb:,.0f} "
          "(ring all-reduce volume) | 1× |")
    for name, r in runs:
        acc = r["node_accuracy"]
        mb = r["bytes_per_node"] / 1e6
        print(f"| {labels[name]}{note} | {100 * r['average_model_accuracy']:.2f}% | {100 * min(acc):.2f} / "
              f"{100 * r['node_accuracy_mean']:.2f} / {100 * max(acc):.2f}% | "
              f"{100 * (r['node_accuracy_mean'] - ddp_acc):+.2f} points | {mb:,.1f} | {ddp_mb / mb:.0f}× |")


def auto_table():
    """algorithm.lr_auto (scripts/run_results.sh auto) against §1's hand-picked steps where there is one."""
    def first_below(r, level=1e-8):
        return next((x["round"] for x in r["records"] if x.get("rel_error", 1) <= level), None)
    rows = [("auto_exact_full", "§1 L1 logistic, full gradient", "exact_prox_lead_full"),
            ("auto_exact_lsvrg", "§1 L1 logistic, LSVRG batch 1", "exact_prox_lead_lsvrg"),
            ("auto_exact_saga", "§1 L1 logistic, SAGA batch 1", "exact_prox_lead_saga"),
            ("auto_smooth_lead", "§1 smooth logistic (LEAD), full gradient", "smooth_lead"),
            ("auto_csv_breast_cancer", "breast cancer CSV (569 × 30), L1 logistic, full gradient", None),
            ("auto_csv_wine", "wine CSV (178 × 13, 3 classes), L1 softmax, full gradient", None)]
    print("| problem | agreed L: objective / per sample | automatic lr | rel. error at the end (round) | "
          "first round ≤ 1e-8 | hand-picked lr: first round ≤ 1e-8 |")
    print("|---|---|---|---|---|---|")
    for name, label, hand in rows:
        r = load(name)
        if not r:
            continue
        a, last = r["lr_auto"], r["records"][-1]
        h = load(hand) if hand else None
        hand_cell = "-"
        if h:
            lr = h["config"]["algorithm"]["lr"]
            f = first_below(h)
            hand_cell = f"{lr:g}: {f:,}" if f else f"{lr:g}: not within {h['records'][-1]['round']:,}"
        f = first_below(r)
        print(f"| {label} | {a['L_full']:.3g} / {a['L_sample']:.3g} | {a['lr']:.4g} | {last['rel_error']:.1e} "
              f"({last['round']:,}) | {f'{f:,}' if f else 'not reached'} | {hand_cell} |")


def bridge_table():
    b = load("trainer_bridge")
    if not b:
        return
    mc, t = b["memcpy_ms"], b.get("threads", 1)
    print(f"| {b['dim']:,} float32 parameters ({b['param_bytes'] / 1e6:.0f} MB) | per round | in memcpys |")
    print("|---|---|---|")
    rows = (("memcpy of the parameters (one thread)", "memcpy_ms"),
            (f"memcpy split over {t} threads", "memcpy_threads_ms"),
            ("float32 → float64 → float32 with Eigen's cast (the bridge before)", "convert_eigen_ms"),
            ("the same with param_copy, one thread", "convert_1thread_ms"),
            (f"the same with param_copy, {t} threads", "convert_ms"),
            ("shared-memory bridge, copies on one thread", "shm_1thread_round_ms"),
            (f"**shared-memory bridge (built), copies on {t} threads**", "shm_round_ms"),
            ("parameters inside the ipc messages", "inline_round_ms"))
    for label, key in rows:
        if key in b:
            print(f"| {label} | {b[key]:.1f} ms | {b[key] / mc:.2f} |")


def cnn_tta_table():
    r = load("cnn_tta")
    if not r:
        return
    names = {"cnn_deepsqueeze": "gossipd DeepSqueeze top-1% + train_cnn.py trainers", "cnn_ddp": "PyTorch DDP, gloo"}
    by = {x["method"]: x for x in r["runs"]}
    print(f"| method | time to {100 * r['target_accuracy']:.0f}% | rounds (DDP: steps) | MB sent, 8 hosts | speed-up over DDP |")
    print("|---|---|---|---|---|")
    for x in r["runs"]:
        t = f"{x['seconds']:.1f} s" if x["reached"] else f"not reached in {x['seconds']:.0f} s ({100 * x['accuracy']:.1f}%)"
        d = by.get("cnn_ddp")
        vs = f"{d['seconds'] / x['seconds']:.2f}×" if d and d["reached"] and x["reached"] and d is not x else "-"
        print(f"| {names.get(x['method'], x['method'])} | {t} | {x['rounds']} | {x['bytes_sent'] / 1e6:,.0f} | {vs} |")


def nodes_table():
    names = {"dpsgd": "D-PSGD fp32", "deepsqueeze_topk": "DeepSqueeze top-1%, η = 0.02",
             "choco_topk": "CHOCO top-1%, γ = 0.02"}
    rows = []
    for m, label in names.items():
        for suffix, phase in (("", "none"), ("_consensus20", "20 rounds"), ("_consensus100", "100 rounds")):
            r = load(f"nodes_{m}{suffix}")
            if r:
                rows.append((label, phase, last(r)))
    if not rows:
        return
    print("| method | final consensus | average model | nodes: worst / mean / best | worst node below average | "
          "consensus distance | MB sent |")
    print("|---|---|---|---|---|---|---|")
    for label, phase, x in rows:
        print(f"| {label} | {phase} | {100 * x['accuracy']:.2f}% | {100 * x['node_accuracy_min']:.2f} / "
              f"{100 * x['node_accuracy_mean']:.2f} / {100 * x['node_accuracy_max']:.2f}% | "
              f"{100 * (x['accuracy'] - x['node_accuracy_min']):.2f} points | {x['consensus_distance']:.2e} | "
              f"{x['bytes_sent'] / 1e6:,.1f} |")


def gamma_table():
    rows = []
    runs = (("0.05", "0.05, fixed"), ("0.02", "0.02, fixed"), ("0.05_adapt", "0.05, adapted"),
            ("default", "default (2δ), adapted"))
    for graph, label in (("torus", "12-node torus, Dirichlet(0.3)"), ("ring", "16-node ring, Dirichlet(0.5)")):
        for name, g in runs:
            r = load(f"gamma_{graph}_choco_{name}")
            if r:
                rows.append((label, g, r))
    if not rows:
        return
    marks = (1000, 2500, 5000, 10000)
    print("| graph | γ | relative consensus at round " + " / ".join(f"{m:,}" for m in marks) +
          " | γ at 10,000 (min – max over nodes) | average model at 5,000 / 10,000 | worst node at 10,000 | warning |")
    print("|---|---|---|---|---|---|---|")
    for label, g, r in rows:
        at = {x["round"]: x for x in r["records"]}
        rel = " / ".join(f"{at[m]['relative_consensus']:.1e}" for m in marks)
        warn = r.get("warnings") or []
        w = f"at round {warn[0].split(' at round ')[1].split(',')[0]}" if warn else "none"
        last = at[10000]
        if "gamma_min" in last:
            lo, hi = last["gamma_min"], last["gamma_max"]
            gam = f"{lo:.4g}" if lo == hi else f"{lo:.4g} – {hi:.4g}"
        else:  # a run from before the step was recorded: it was fixed
            gam = g.split(",")[0]
        print(f"| {label} | {g} | {rel} | {gam} | {100 * at[5000]['accuracy']:.1f} / {100 * last['accuracy']:.1f}% | "
              f"{100 * last['node_accuracy_min']:.1f}% | {w} |")


def leader_table():
    """lsgd and codistill against D-PSGD (scripts/run_results.sh leader)."""
    base = load("leader_dpsgd")
    runs = [("D-PSGD fp32", base)] + [(f"lsgd, λ = {l}", load(f"leader_lsgd_{l}")) for l in ("0.5", "2")]
    runs += [(f"lsgd, global leader g = {g} (every 100 rounds)", load(f"leader_lsgd_global_{g}")) for g in ("0.1", "0.5")]
    runs += [("lsgd, λ = 2 and global g = 0.5", load("leader_lsgd_2_global_0.5"))]
    runs += [("alone (codistill, α = 0)", load("leader_codistill_0"))]
    runs += [(f"codistill, α = {a}", load(f"leader_codistill_{a}")) for a in ("1", "4")]
    runs += [("codistill, α = 1, copies every 10 rounds", load("leader_codistill_1_period10"))]
    runs += [(f"codistill, α = {a}, top-1% copies", load(f"leader_codistill_{a}_topk")) for a in ("1", "4")]
    runs += [("codistill, α = 4, fp16 predictions on 256 reference images", load("leader_codistill_4_reference"))]
    runs += [("DeepSqueeze top-1% (η = 0.02)", load("leader_deepsqueeze_topk")),
             ("lsgd on DeepSqueeze top-1% (η = 0.02), λ = 0.1", load("leader_lsgd_deepsqueeze_topk_0.1")),
             ("lsgd on DeepSqueeze top-1% (η = 0.02), λ = 2", load("leader_lsgd_deepsqueeze_topk_2")),
             ("CHOCO top-1% (default γ)", load("leader_choco_topk"))]
    if not base or not all(r for _, r in runs):
        return
    marks = (500, 1000, 2000, 3000)
    print("| run | average model at round " + " / ".join(f"{m:,}" for m in marks) +
          " | nodes at 3,000 (min – mean – max) | worst / mean node, rounds 2,000–3,000 | MB sent |")
    print("|---|---|---|---|---|")
    for label, r in runs:
        at = {x["round"]: x for x in r["records"]}
        x = at[3000]
        acc = " / ".join(f"{100 * at[m]['accuracy']:.1f}" for m in marks)
        # The worst node moves by up to 10 points from one evaluation to the next: the average over the
        # last 5 evaluations is the steadier number.
        late = [y for y in r["records"] if y["round"] >= 2000]
        worst = sum(y["node_accuracy_min"] for y in late) / len(late)
        mean = sum(y["node_accuracy_mean"] for y in late) / len(late)
        print(f"| {label} | {acc}% | {100 * x['node_accuracy_min']:.1f} – {100 * x['node_accuracy_mean']:.1f} – "
              f"{100 * x['node_accuracy_max']:.1f}% | {100 * worst:.1f} / {100 * mean:.1f}% | {x['bytes_sent'] / 1e6:,.1f} |")


def lgc_table():
    """LGC against top-k at the same bytes per message (scripts/run_results.sh lgc)."""
    runs = []
    for a, name in (("deepsqueeze", "DeepSqueeze (η = 0.02)"), ("choco", "CHOCO")):
        runs += [(f"{name}, top-1%", load(f"lgc_{a}_topk")),
                 (f"{name}, lgc m = 8 + top-0.34%", load(f"lgc_{a}_m8")),
                 (f"{name}, lgc m = 4 + top-0.67%", load(f"lgc_{a}_m4")),
                 (f"{name}, top-0.34% (lgc's residual alone)", load(f"lgc_{a}_topk_0.0034"))]
    runs += [("CHOCO, lgc m = 8 + top-0.34%, γ = 0.02 (top-1%'s)", load("lgc_choco_m8_gamma_0.02")),
             ("CHOCO, top-0.34% alone, γ = 0.02", load("lgc_choco_topk_0.0034_gamma_0.02"))]
    if not all(r for _, r in runs):
        return
    marks = (500, 1000, 2000, 3000)
    print("| run | bytes / message after the warm-up | average model at round " + " / ".join(f"{m:,}" for m in marks) +
          " | average model when 300 MB were sent | worst / mean node, rounds 2,000–3,000 | MB sent |")
    print("|---|---|---|---|---|---|")
    for label, r in runs:
        at = {x["round"]: x for x in r["records"]}
        x = at[3000]
        acc = " / ".join(f"{100 * at[m]['accuracy']:.1f}" for m in marks)
        # bytes per message in the last 1,000 rounds (after the warm-up and the basis' flood): 32 a round
        per = (x["bytes_sent"] - at[2000]["bytes_sent"]) / (1000 * 32)
        by = next((y for y in r["records"] if y["bytes_sent"] >= 300e6), None)
        late = [y for y in r["records"] if y["round"] >= 2000]
        worst = sum(y["node_accuracy_min"] for y in late) / len(late)
        mean = sum(y["node_accuracy_mean"] for y in late) / len(late)
        at300 = f"{100 * by['accuracy']:.1f}% (round {by['round']:,})" if by else "–"
        print(f"| {label} | {per / 1e3:.2f} KB | {acc}% | {at300} | {100 * worst:.1f} / {100 * mean:.1f}% | "
              f"{x['bytes_sent'] / 1e6:,.1f} |")


def cltk_table():
    """CLT-k against top-k at the same k (scripts/run_results.sh cltk)."""
    rows = [(f"deepsqueeze_{c}_{e}", "DeepSqueeze", c, f"η = {e}") for e in ("0.02", "0.005") for c in ("topk", "cltk")]
    rows += [("deepsqueeze_cltk8_0.005", "DeepSqueeze", "cltk8", "η = 0.005")]
    rows += [("choco_topk_default", "CHOCO", "topk", "γ = 0.0201 (default, 2δ)"),
             ("choco_cltk_0.0201", "CHOCO", "cltk", "γ = 0.0201 (2δ)"),
             ("choco_cltk_default", "CHOCO", "cltk", "γ = 0.01 (default, δ)"),
             ("choco_topk_0.01", "CHOCO", "topk", "γ = 0.01"),
             ("choco_randk_0.0201", "CHOCO", "randk", "γ = 0.0201 (2δ)"),
             ("choco_randk_default", "CHOCO", "randk", "γ = 0.01 (default, δ)"),
             ("choco_cltk8_default", "CHOCO", "cltk8", "γ = 0.01 (default, δ)")]
    runs = [(load(f"cltk_{name}"), m, c, step) for name, m, c, step in rows]
    if not all(r for r, *_ in runs):
        return
    marks = (500, 1000, 2000, 3000)
    print("| method | compressor | step | average model at round " + " / ".join(f"{m:,}" for m in marks) +
          " | nodes at 3,000 (min – mean) | relative consensus at 3,000 | MB sent | bytes per message |")
    print("|---|---|---|---|---|---|---|---|")
    names = {"topk": "top-1%", "cltk": "CLT-k 1%", "randk": "rand-k 1%", "cltk8": "CLT-k 1%, each set 8 rounds"}
    for r, m, c, step in runs:
        at = {x["round"]: x for x in r["records"]}
        x = at[3000]
        acc = " / ".join(f"{100 * at[k]['accuracy']:.1f}" for k in marks)
        cfg = r["config"]
        assert cfg["cluster"]["topology"] == "ring", "bytes per message assume a ring"
        degree = 2 + 2 * cfg["cluster"]["extra"]  # every node sends to each ring neighbour every round
        per_msg = x["bytes_sent"] / (cfg["algorithm"]["rounds"] * cfg["cluster"]["nodes"] * degree)
        print(f"| {m} | {names[c]} | {step} | {acc}% | {100 * x['node_accuracy_min']:.1f} – "
              f"{100 * x['node_accuracy_mean']:.1f}% | {x['relative_consensus']:.1e} | {x['bytes_sent'] / 1e6:,.1f} | "
              f"{per_msg:,.0f} |")


def curve_table():
    r = load("curve_cost")
    if not r:
        return
    print("| message | round, plain TCP | round, CurveZMQ | transfer part (round − compute), plain → Curve | "
          "node CPU per round, plain → Curve |")
    print("|---|---|---|---|---|")
    for x in r["sizes"]:
        print(f"| {x['message_bytes'] / 2**20:.0f} MB ({x['parameters']:,} parameters) | {x['round_ms_plain']:.1f} ms | "
              f"{x['round_ms_curve']:.1f} ms (×{x['round_ratio']}) | {x['transfer_ms_plain']} → {x['transfer_ms_curve']} ms "
              f"(×{x['transfer_ratio']}) | {x['cpu_ms_plain']:.0f} → {x['cpu_ms_curve']:.0f} ms |")


def fuzz_table():
    runs = load("fuzz")
    if not runs:
        return
    print("| target | time | executions | per second | coverage (edges) | peak RSS | crashes |")
    print("|---|---|---|---|---|---|---|")
    for r in runs:
        print(f"| {r['target']} | {r['seconds'] / 60:.0f} min | {r['runs']:,} | {r['exec_per_sec']:,} | "
              f"{r['coverage_edges']} | {r['peak_rss_mb']} MB | {'yes' if r['crashed'] else 'none'} |")


SECTIONS = {
    "TABLE_EXACT": lambda: convex_table(["exact_prox_lead_full", "exact_prox_lead_lsvrg", "exact_prox_lead_saga",
                                         "exact_prox_lead_sgd"]),
    "TABLE_SMOOTH": lambda: convex_table(["smooth_nids", "smooth_lead", "smooth_dpsgd", "smooth_choco",
                                          "smooth_deepsqueeze"]),
    "TABLE_CHURN": lambda: convex_table(["churn_prox_lead", "churn_join_prox_lead"]),
    "TABLE_FMNIST": lambda: fmnist_table("fmnist"),
    "TABLE_MLP": lambda: fmnist_table("mlp"),
    "TABLE_SCALE": scale_table,
    "TABLE_ROUND": round_table,
    "TABLE_DOCKER_TRAIN": docker_train_table,
    "TABLE_DOCKER_CHAOS": docker_chaos_table,
    "TABLE_HTTP_LOAD": http_load_table,
    "TABLE_FUZZ": fuzz_table,
    "TABLE_BANDWIDTH": bandwidth_table,
    "TABLE_CURVE": curve_table,
    "TABLE_NODES": nodes_table,
    "TABLE_PYTORCH": pytorch_table,
    "TABLE_COSINE_PYTORCH": lambda: pytorch_table("_cosine", ", cosine lr"),
    "TABLE_R3000_PYTORCH": lambda: pytorch_table("_r3000", ", 3,000 steps"),
    "TABLE_BRIDGE": bridge_table,
    "TABLE_AUTO": auto_table,
    "TABLE_LEADER": leader_table,
    "TABLE_LGC": lgc_table,
    "TABLE_CNN_TTA": cnn_tta_table,
    "TABLE_GAMMA": gamma_table,
    "TABLE_CLTK": cltk_table,
}


def render(key):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        SECTIONS[key]()
    return buf.getvalue().rstrip("\n")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--fill":
        text = open(sys.argv[2]).read()
        for key in SECTIONS:
            text = text.replace(key, render(key))
        with open(sys.argv[3], "w") as f:
            f.write(text)
        print(f"wrote {sys.argv[3]}")
    else:
        for key in SECTIONS:
            print(f"\n{key}\n{render(key)}")
