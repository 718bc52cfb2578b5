#pragma once
// One (algorithm, compressor) pair per method, shared by the network-safety and checkpoint tests, and a
// MiniNet factory for them on a small ridge problem with the full-gradient estimator.
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/node.h"
#include "compressors/compressor.h"
#include "harness.h"
#include "problems.h"

namespace gossip::testing {

struct AlgoCase {
  std::string algo;
  compress::CompressorSpec spec;  // the configured compressor
  compress::CompressorSpec wire;  // what is really on the wire (nids/ed always send fp32)
};

inline std::vector<AlgoCase> allCases() {
  const compress::CompressorSpec topk{.name = "topk", .ratio = 0.3};
  const compress::CompressorSpec lead2{.name = "lead", .bits = 2};
  const compress::CompressorSpec qsgd{.name = "qsgd", .levels = 4};
  const compress::CompressorSpec fp32{.name = "fp32"};
  return {{"dpsgd", topk, topk},   {"deepsqueeze", qsgd, qsgd}, {"choco", topk, topk},
          {"nids", fp32, fp32},    {"lead", lead2, lead2},      {"prox_lead", lead2, lead2}};
}

// Owns what the nodes of one net refer to.
struct CaseEnv {
  CaseEnv(const AlgoCase& c, const Problem& p, double stepSize, Incarnation inc = 0) : problem(p), lr(stepSize) {
    params.name = c.algo;
    params.gamma = c.algo == "choco" ? 0.5 : 1.0;
    params.eta = 0.5;
    params.l1 = c.algo != "prox_lead" ? 0.0 : (p.l1 > 0.0 ? p.l1 : 1e-3);  // p.solve() knows p.l1
    params.incarnation = inc;
    comp = compress::makeCompressor(c.spec);
  }
  std::unique_ptr<algo::Node> make(PeerId id, Incarnation inc = 0) const {
    algo::AlgorithmParams q = params;
    q.incarnation = inc;
    algo::NodeSchedule sched;
    const double step = lr;
    sched.lr = [step](Round) { return step; };
    auto a = algo::makeAlgorithm(q, *comp, id, Vec::Zero(static_cast<Eigen::Index>(problem.dim())));
    return std::make_unique<algo::Node>(id, std::move(a), std::make_unique<FullGradient>(problem, id), sched);
  }
  MiniNet::Factory factory() const {
    return [this](PeerId id) { return make(id); };
  }
  const Problem& problem;
  double lr;
  algo::AlgorithmParams params;
  std::unique_ptr<compress::Compressor> comp;
};

inline Bytes saveAlgo(const algo::Algorithm& a) {
  Bytes b;
  ByteWriter w(b);
  a.save(w);
  return b;
}

}  // namespace gossip::testing
