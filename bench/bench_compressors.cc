// Compressor throughput on one core, relative to memcpy measured in the same run (DESIGN.md §9).
//
// For every name in compressorNames(): encode and decodeAdd time (best of N) on a large float vector
// drawn from N(0,1) * exp(N(0,1)), encoded size, bits per element, and both throughputs as a fraction
// of memcpy's throughput on the same buffer. Compressors that are not implemented yet are listed with
// a note instead of numbers. Writes JSON to --out (stdout if absent).
//
// Throughput convention: input bytes (4 * dim) per second, for memcpy as well, so the ratio reads as
// "fraction of the time a plain copy of the vector takes".
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <numeric>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "compressors/compressor.h"
#include "compressors/select.h"
#include "compressors/shared_support.h"
#include "core/error.h"
#include "core/rng.h"

namespace gc = gossip::compress;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

namespace {

struct Options {
  std::string out;
  std::size_t dim = std::size_t{1} << 24;
  int reps = 7;
  bool reference = true;  // also time a full nth_element top-k as the naive baseline
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw gossip::ConfigError(a + " needs a value");
      return argv[++i];
    };
    if (a == "--out") {
      o.out = next();
    } else if (a == "--dim") {
      o.dim = std::stoull(next());
    } else if (a == "--reps") {
      o.reps = std::max(1, std::stoi(next()));
    } else if (a == "--no-reference") {
      o.reference = false;
    } else {
      throw gossip::ConfigError("unknown argument " + a +
                                " (use --out FILE, --dim N, --reps N, --no-reference)");
    }
  }
  return o;
}

// Best-of-reps wall time of fn(), in seconds, after one untimed warm-up call.
template <class Fn>
double bestOf(int reps, Fn&& fn) {
  fn();
  double best = 1e300;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    fn();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return best;
}

std::vector<float> realisticMix(std::size_t dim) {
  gossip::Rng rng(20240601);
  std::vector<float> x(dim);
  for (auto& v : x) v = static_cast<float>(rng.normal() * std::exp(rng.normal()));
  return x;
}

// What a naive implementation does: nth_element over all indices, then sort the k winners.
double referenceTopK(const std::vector<float>& x, std::uint32_t k) {
  std::vector<std::uint32_t> idx(x.size());
  const auto t0 = Clock::now();
  {
    std::iota(idx.begin(), idx.end(), 0u);
    std::nth_element(idx.begin(), idx.begin() + (k - 1), idx.end(), [&](std::uint32_t a, std::uint32_t b) {
      const float ma = std::abs(x[a]), mb = std::abs(x[b]);
      return ma != mb ? ma > mb : a < b;
    });
    std::sort(idx.begin(), idx.begin() + k);
  }
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Best-of-reps times of memcpy, encode and decodeAdd, interleaved rep by rep so that all three see the
// same machine load (the host is shared; a memcpy figure taken minutes earlier would skew the ratio).
struct Times {
  double memcpy = 1e300, encode = 1e300, decode = 1e300;
};

template <class Fn>
double timed(Fn&& fn) {
  const auto t0 = Clock::now();
  fn();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

json benchOne(std::string_view name, const std::vector<float>& x, std::vector<float>& scratch, int reps) {
  json r;
  r["name"] = name;
  gc::CompressorSpec spec;  // defaults: ratio 0.01, qsgd s=16, lead b=2, ...
  spec.name = std::string(name);
  std::unique_ptr<gc::Compressor> c;
  try {
    c = gc::makeCompressor(spec);
  } catch (const gossip::Error& e) {
    r["skipped"] = e.what();
    return r;
  }
  const auto dim = static_cast<std::uint32_t>(x.size());
  if (auto* ctl = gc::cltkControl(*c))  // CLT-k needs an agreed support: the top-k of the input itself
    ctl->setSupport(gc::chooseSupport(std::span<const float>(x), ctl->supportSize(dim)));
  r["compressor"] = c->name();
  if (gc::cltkControl(*c))
    r["note"] = "value messages only; the leader's index announcement (about one index set per node per round "
                "with tree forwarding, see docs/cltk.md) is not included";
  gossip::Rng rng(7);
  gc::Encoded enc;
  std::vector<float> acc(x.size(), 0.0f);
  Times best;
  try {
    auto copy = [&] { std::memcpy(scratch.data(), x.data(), 4 * x.size()); };
    auto encode = [&] { c->encode(std::span<const float>(x), rng, enc); };
    auto decode = [&] { c->decodeAdd(enc.view(), std::span<float>(acc), 1.0); };
    encode(), decode();  // warm-up: first-touch page faults and scratch growth are not measured
    for (int i = 0; i < reps; ++i) {
      best.memcpy = std::min(best.memcpy, timed(copy));
      best.encode = std::min(best.encode, timed(encode));
      best.decode = std::min(best.decode, timed(decode));
    }
  } catch (const gossip::Error& e) {
    return json{{"name", name}, {"skipped", e.what()}};
  }
  const double gb = 4.0 * double(dim) / 1e9;
  r["memcpy_GBps"] = gb / best.memcpy;
  r["encode_s"] = best.encode;
  r["decode_add_s"] = best.decode;
  r["encode_GBps"] = gb / best.encode;
  r["decode_add_GBps"] = gb / best.decode;
  r["encode_vs_memcpy"] = best.memcpy / best.encode;
  r["decode_add_vs_memcpy"] = best.memcpy / best.decode;
  r["encoded_bytes"] = enc.size();
  r["bits_per_element"] = 8.0 * double(enc.size()) / double(dim);
  r["compression_ratio"] = 4.0 * double(dim) / double(enc.size());
  return r;
}

// Error feedback's round with top-1% (DeepSqueeze's encode, compressors/error_feedback.h): the passes it
// took until session 16 (Node's finiteness check of x, m += x, encode, decodeAdd(-1) parsing the message
// back) against Compressor::encodeWithFeedback (the add and the check fused into the selection's pass, the
// kept entries zeroed as they are copied out). Interleaved rep by rep with a memcpy of the model; each path
// works on its own error memory, both starting from the same values.
json benchErrorFeedback(const std::vector<float>& x, std::vector<float>& scratch, int reps) {
  const auto c = gc::makeCompressor({.name = "topk", .ratio = 0.01});
  std::vector<float> mSeparate(x.size()), mFused(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) mSeparate[i] = mFused[i] = 0.5f * x[(i * 7919) % x.size()];
  gossip::Rng rng(3);
  gc::Encoded e1, e2;
  auto separate = [&] {
    std::uint32_t bad = 0;
    for (const float v : x) {
      std::uint32_t u;
      std::memcpy(&u, &v, 4);
      bad |= static_cast<std::uint32_t>((u & 0x7F800000u) == 0x7F800000u);
    }
    if (bad) throw gossip::Error("non-finite input");
    for (std::size_t i = 0; i < x.size(); ++i) mSeparate[i] += x[i];
    c->encode(std::span<const float>(mSeparate), rng, e1);
    c->decodeAdd(e1.view(), std::span<float>(mSeparate), -1.0);
  };
  auto fused = [&] {
    if (!c->encodeWithFeedback(std::span<float>(mFused), std::span<const float>(x), rng, e2))
      throw gossip::Error("non-finite input");
  };
  auto copy = [&] { std::memcpy(scratch.data(), x.data(), 4 * x.size()); };
  separate(), fused();
  double tc = 1e300, ts = 1e300, tf = 1e300;
  for (int i = 0; i < reps; ++i) {
    tc = std::min(tc, timed(copy));
    ts = std::min(ts, timed(separate));
    tf = std::min(tf, timed(fused));
  }
  if (e1.bytes != e2.bytes || std::memcmp(mSeparate.data(), mFused.data(), 4 * x.size()) != 0)
    throw gossip::Error("error feedback: the fused round differs from the separate passes");
  std::fprintf(stderr, "  error feedback top-1%%: separate passes %.4f s (%.2f memcpys), fused %.4f s (%.2f memcpys)\n",
               ts, ts / tc, tf, tf / tc);
  return {{"memcpy_s", tc}, {"separate_s", ts}, {"fused_s", tf}, {"separate_memcpys", ts / tc}, {"fused_memcpys", tf / tc},
          {"note", "separate = Node's check of x + m += x + encode + decodeAdd(-1); fused = encodeWithFeedback; "
                   "identical bytes and memory checked after the runs"}};
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options opt = parse(argc, argv);
    std::fprintf(stderr, "bench_compressors: dim %zu, best of %d\n", opt.dim, opt.reps);
    const auto x = realisticMix(opt.dim);
    std::vector<float> dst(x.size());
    const double tm = bestOf(opt.reps, [&] { std::memcpy(dst.data(), x.data(), 4 * x.size()); });
    const double memcpyGBps = 4.0 * double(x.size()) / 1e9 / tm;
    std::fprintf(stderr, "  memcpy %.2f GB/s\n", memcpyGBps);

    json out;
    out["dim"] = opt.dim;
    out["reps"] = opt.reps;
    out["input"] = "float32 N(0,1) * exp(N(0,1))";
    out["throughput_unit"] = "input bytes (4 * dim) per second, 1e9 B = 1 GB";
    out["memcpy_s"] = tm;
    out["memcpy_GBps"] = memcpyGBps;
    out["ratio_note"] = "each result's *_vs_memcpy uses the memcpy time measured interleaved with it";
    out["results"] = json::array();
    for (auto name : gc::compressorNames()) {
      auto r = benchOne(name, x, dst, opt.reps);
      if (r.contains("skipped"))
        std::fprintf(stderr, "  %-14s skipped: %s\n", std::string(name).c_str(),
                     r["skipped"].get<std::string>().c_str());
      else
        std::fprintf(stderr, "  %-14s encode %6.2f GB/s (%4.0f%% of memcpy)  decodeAdd %6.2f GB/s (%4.0f%%)  %.3f bits/elem\n",
                     std::string(name).c_str(), r["encode_GBps"].get<double>(),
                     100 * r["encode_vs_memcpy"].get<double>(), r["decode_add_GBps"].get<double>(),
                     100 * r["decode_add_vs_memcpy"].get<double>(), r["bits_per_element"].get<double>());
      out["results"].push_back(std::move(r));
    }
    if (opt.reference && opt.dim > 0) {
      const auto k = static_cast<std::uint32_t>(std::max<double>(1.0, std::round(0.01 * double(opt.dim))));
      std::vector<std::uint32_t> idx;
      const double fast = bestOf(opt.reps, [&] { gc::selectTopK(std::span<const float>(x), k, idx); });
      const double naive = referenceTopK(x, k);
      out["topk_selection"] = {{"k", k},
                               {"selectTopK_s", fast},
                               {"full_nth_element_s", naive},
                               {"speedup", naive / fast}};
      std::fprintf(stderr, "  selectTopK(1%%) %.4f s vs full nth_element %.4f s (%.1fx)\n", fast, naive, naive / fast);
    }
    if (opt.dim >= 100) out["error_feedback_topk"] = benchErrorFeedback(x, dst, opt.reps);
    const std::string text = out.dump(2);
    if (opt.out.empty()) {
      std::cout << text << "\n";
    } else {
      std::ofstream f(opt.out);
      if (!f) throw gossip::ConfigError("--out: cannot write " + opt.out);
      f << text << "\n";
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_compressors: %s\n", e.what());
    return 2;
  }
}
