// Manual smoke check, not a ctest test: loads Fashion-MNIST from the Debian package, trains softmax
// regression with minibatch SGD, and times lossAndGrad on 32-sample batches for softmax and the MLP.
// Build: cmake --build <dir> --target train_fmnist_check; run with an optional data directory.
#include <chrono>
#include <ctime>
#include <cstdio>
#include <exception>
#include <string>

#include "training/data_loader.h"
#include "training/estimators.h"
#include "training/model_factory.h"
#include "training/partition.h"

using namespace gossip;
using namespace gossip::training;
using Clock = std::chrono::steady_clock;

namespace {
double secondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }
// Process CPU time: the build machine is shared, and CPU time is less distorted by other load than wall time.
double cpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

void timeBatches(const Model& m, const Dataset& d, const char* label) {
  Rng rng(3);
  Vec x, g;
  m.init(x, rng);
  std::vector<std::uint32_t> batch(32);
  const int reps = 2000;
  const double c0 = cpuSeconds();
  double sink = 0;
  for (int r = 0; r < reps; ++r) {
    for (auto& b : batch) b = static_cast<std::uint32_t>(rng.below(d.samples()));
    sink += m.lossAndGrad(x, d, batch, g);
  }
  std::printf("%-8s dim %7zu  lossAndGrad(32 rows): %.1f us CPU/call  (checksum %.3f)\n", label, m.dim(),
              1e6 * (cpuSeconds() - c0) / reps, sink / reps);
}
}  // namespace

int main(int argc, char** argv) {
  try {
    DataSpec spec = argc > 1 ? fashionMnistSpec(argv[1]) : fashionMnistSpec();
    const auto t0 = Clock::now();
    const LoadedData data = loadDataset(spec);
    std::printf("loaded %zu train + %zu test samples, %zu features, %d classes in %.2f s\n", data.train.samples(),
                data.test->samples(), data.train.features(), data.train.classes, secondsSince(t0));

    auto softmax = makeModel({"softmax", {}, 0.0, 1e-4, true}, data.train.features(), data.train.classes);
    auto mlp = makeModel({"mlp", {128}, 0.0, 1e-4, true}, data.train.features(), data.train.classes);
    timeBatches(*softmax, data.train, "softmax");
    timeBatches(*mlp, data.train, "mlp");

    // Centralized minibatch SGD on softmax: 5 epochs, batch 32, lr 0.2 / (1 + epoch).
    const auto rows = partitionIid(data.train.samples(), 1, 0)[0];
    auto est = makeEstimator({"sgd", 32, 0}, *softmax, data.train, rows, 1);
    Rng rng(1);
    Vec x, g;
    softmax->init(x, rng);
    const auto t1 = Clock::now();
    const std::size_t steps_per_epoch = data.train.samples() / 32;
    for (int epoch = 0; epoch < 5; ++epoch) {
      const double lr = 0.2 / (1 + epoch);
      for (std::size_t s = 0; s < steps_per_epoch; ++s) {
        est->estimate(x, g);
        x -= lr * g;
      }
      std::printf("epoch %d: train loss %.4f, test accuracy %.4f\n", epoch + 1, softmax->loss(x, data.train),
                  softmax->accuracy(x, *data.test));
    }
    std::printf("5 softmax epochs in %.2f s\n", secondsSince(t1));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
}
