#!/usr/bin/python3
"""Rewrite the compressor table in README.md from a `make bench` JSON file, so the README's figures are
always those of one measured run.

    scripts/bench_table.py bench/results/compressors.json README.md
"""
import json
import sys

# name -> (configuration in the bench, bias, bound); the numbers come from the JSON.
INFO = {
    "fp32": ("-", "exact", "ω = 0"),
    "fp16": ("IEEE half, round to nearest even", "biased", "δ = 1 − 2⁻²² (unit roundoff²)"),
    "bf16": ("upper 16 bits, round to nearest even", "biased", "δ = 1 − 2⁻¹⁶"),
    "topk": ("ratio 1%, indices packed or bitmap", "biased", "δ = k/d"),
    "randk": ("ratio 1%, seed in payload", "biased (unbiased: ×d/k)", "δ = k/d (ω = d/k − 1)"),
    "sign": ("one ℓ1 scale per block", "biased", "δ = 1/B (B = block length)"),
    "qsgd": ("s = 16, one ℓ2 norm per block", "unbiased (or scaled)", "ω = min(B/s², √B/s) (δ = 1/(1+ω))"),
    "lead": ("b = 2, ∞-norm, base-(2s+1) packing", "unbiased", "ω = min(B/4^b, √B/s), s = 2^(b−1)"),
    "natural": ("C_nat: sign + 8-bit exponent", "unbiased", "ω = 1/8"),
    "dither": ("natural dithering s = 16, p = ∞", "unbiased", "ω = 1/8 + B^(1/r) 2^(1−s) min(1, B^(1/r) 2^(1−s))"),
    "topk_natural": ("top-1% then C_nat values", "biased", "δ = (1 − 1/8) k/d"),
    "topk_dither": ("top-1% then natural dithering", "biased", "δ = (1 − ω_k) k/d, or k/(d(1+ω_k))"),
    "cltk": ("values on a shared support (CLT-k)", "biased", "nominal k/d (depends on support overlap)"),
}
BEGIN, END = "<!-- compressor-table:begin -->", "<!-- compressor-table:end -->"


def table(bench):
    lines = [
        f"Measured by `make bench`: {bench['dim'] // (1 << 20)}M floats of {bench['input']}, one core, best of "
        f"{bench['reps']}; each ratio is against `memcpy` of the same buffer timed in the same run "
        f"({bench['memcpy_GBps']:.1f} GB/s in this run).",
        "",
        "| `compressor.name` | configuration in the bench | bits/elem | bias | bound | encode vs memcpy | decodeAdd vs memcpy |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in bench["results"]:
        if r["name"] not in INFO or "encode_vs_memcpy" not in r:
            continue
        cfg, bias, bound = INFO[r["name"]]
        lines.append(f"| `{r['name']}` | {cfg} | {r['bits_per_element']:.2f} | {bias} | {bound} | "
                     f"{100 * r['encode_vs_memcpy']:.0f}% | {100 * r['decode_add_vs_memcpy']:.0f}% |")
    sel = bench.get("topk_selection")
    if sel:
        lines += ["", f"Top-k selection of 1% of the same input: {1000 * sel['selectTopK_s']:.1f} ms, "
                      f"{sel['speedup']:.0f}x faster than a full `nth_element` (same run)."]
    return "\n".join(lines)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        bench = json.load(f)
    text = open(sys.argv[2]).read()
    if BEGIN not in text or END not in text:
        sys.exit(f"bench_table: markers {BEGIN} ... {END} not found in {sys.argv[2]}")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    with open(sys.argv[2], "w") as f:
        f.write(head + BEGIN + "\n" + table(bench) + "\n" + END + tail)
    print(f"updated {sys.argv[2]}")


if __name__ == "__main__":
    main()
