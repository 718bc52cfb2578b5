#include "algorithms/primal_dual_fp32.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "compressors/simd.h"

namespace gossip::algo::detail {
namespace {
constexpr std::size_t kBlock = 4096;  // 16 KiB per vector: the block's x, d, h, yhat and each edge's h_j, e_ij stay in cache

// One block. Each line reproduces one Eigen statement of PrimalDual's general path (primal_dual.cc), in its
// order: a float product or sum per value, no contraction (-ffp-contract=off, cmake/warnings.cmake).
GOSSIP_VECTOR_CLONES double applyBlock(const PrimalDualFp32& s, std::span<const PrimalDualEdgeFp32> edges,
                                       const std::byte* const* bodies, std::size_t first, std::size_t n,
                                       float* __restrict mix, float* __restrict yhat) {
  float* __restrict x = s.x + first;
  float* __restrict d = s.d + first;
  float* __restrict h = s.h + first;
  const std::byte* __restrict own = s.own + 4 * first;
  const float* __restrict g = s.g + first;
  for (std::size_t i = 0; i < n; ++i) {
    float q;
    std::memcpy(&q, own + 4 * i, 4);
    yhat[i] = h[i] + q;  // yhat_ = h_; decodeAdd(own message): h + 1·q, the same float sum
    mix[i] = 0.0f;
  }
  for (std::size_t k = 0; k < edges.size(); ++k) {
    const PrimalDualEdgeFp32& edge = edges[k];
    float* __restrict hj = edge.h + first;
    float* __restrict ej = edge.e + first;
    const std::byte* __restrict src = bodies[k];  // the edge's value `first`, in one of its runs
    for (std::size_t i = 0; i < n; ++i) {
      float q;
      std::memcpy(&q, src + 4 * i, 4);
      const float yj = hj[i] + 1.0f * q;          // scratch = h_j; decodeAdd (the codec scales by 1)
      hj[i] = s.keep * hj[i] + s.take * yj;       // h_j = (1 - a) h_j + a yhat_j
      const float diff = yhat[i] - yj;            // scratch = yhat_i - scratch
      mix[i] += edge.weight * diff;               // mix += w scratch
      const float inc = diff * edge.dual_step;    // scratch *= dualStep w
      ej[i] += inc;
      d[i] += inc;
    }
  }
  // Σ mix² in 8 double lanes (a strict left-to-right double sum does not vectorize; the order changes only the
  // last bits of the reported disagreement, never the state).
  double lane[8] = {};
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (std::size_t l = 0; l < 8; ++l) lane[l] += static_cast<double>(mix[i + l]) * static_cast<double>(mix[i + l]);
  double sum = 0;
  for (; i < n; ++i) sum += static_cast<double>(mix[i]) * static_cast<double>(mix[i]);
  for (double v : lane) sum += v;
  const float th = s.threshold;
  for (std::size_t k = 0; k < n; ++k) {
    float v = x[k] - (s.eta * g[k] + s.eta * d[k]);  // x -= eta g + eta d
    if (s.prox) v = v > th ? v - th : (v < -th ? v + th : 0.0f);  // proxL1
    x[k] = v;
    h[k] = s.keep * h[k] + s.take * yhat[k];
  }
  return sum;
}
}  // namespace

double primalDualApplyFp32(const PrimalDualFp32& s, std::span<const PrimalDualEdgeFp32> edges) {
  thread_local std::vector<compress::Fp32Runs> bodies;
  thread_local compress::Fp32RunWalk walk;
  bodies.clear();
  for (const PrimalDualEdgeFp32& e : edges) bodies.push_back(e.body);
  walk.reset(bodies);
  float mix[kBlock];
  float yhat[kBlock];
  double sum = 0;
  for (std::size_t first = 0; first < s.dim;) {
    const std::size_t n = walk.next(first, s.dim, kBlock);
    sum += applyBlock(s, edges, walk.at(), first, n, mix, yhat);
    first += n;
  }
  return sum;
}

namespace {
GOSSIP_VECTOR_CLONES bool prepareBlock(const float* __restrict x, const float* __restrict g, const float* __restrict d,
                                       const float* __restrict h, float lr, std::size_t n, std::byte* __restrict out) {
  std::uint32_t bad = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const float v = x[i] - lr * g[i] - lr * d[i] - h[i];  // x_ - lr * g - lr * d_ - h_, left to right
    std::uint32_t u;
    std::memcpy(&u, &v, 4);
    bad |= static_cast<std::uint32_t>((u & 0x7F800000u) == 0x7F800000u);
    std::memcpy(out + 4 * i, &v, 4);
  }
  return bad == 0;
}
}  // namespace

bool primalDualPrepareFp32(const float* x, const float* g, const float* d, const float* h, float lr, std::size_t dim,
                           std::byte* out) {
  return prepareBlock(x, g, d, h, lr, dim, out);
}

}  // namespace gossip::algo::detail
