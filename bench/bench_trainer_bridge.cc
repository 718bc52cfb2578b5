// What the trainer bridge (docs/trainer.md) costs per round, against a plain memcpy of the parameters, for
// the two designs the issue asked us to choose between, measured in one run (trials interleaved, median):
//   shm     the bridge as built: a JSON request over ipc, the parameters read from shared memory into the
//           float64 model and the mixed model written back (TrainerBridge, real code path)
//   inline  the parameters inside the ZeroMQ messages over ipc both ways: the daemon converts the request's
//           payload into the model and the model into a new reply payload, the trainer copies the reply
//           into its parameters (what the bridge would do without shared memory)
// and, as the floor of both, `convert`: float32 -> float64 -> float32 of the model in memory, which the daemon
// needs anyway because the algorithms keep float64 state. The shm bridge runs twice, with its copies on one
// thread and on --threads (daemon/bridge/param_copy.h: streaming stores, split over threads), and the conversion
// floor is timed three ways: Eigen's cast (the bridge's code before param_copy), the param_copy kernels on
// one thread and on --threads. A memcpy on --threads is there to say what the extra threads buy a plain
// copy too. No algorithm work is included: the time is the bridge's alone. The trainer side runs in a second
// thread with its own ZeroMQ context, as a process would. Writes JSON to --out.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <zmq.hpp>

#include "core/error.h"
#include "daemon/bridge/param_copy.h"
#include "daemon/bridge/trainer_bridge.h"

using Clock = std::chrono::steady_clock;
using nlohmann::json;
using gossip::training::Vec;
namespace fs = std::filesystem;

namespace {

double msSince(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Options {
  std::string out;
  std::size_t dim = 10'000'000;
  int rounds = 20;  // per design, interleaved
  unsigned threads = 0;  // the bridge's copy threads (trainer.copy_threads); 0 = its default
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw gossip::ConfigError(a + " needs a value");
      return argv[++i];
    };
    if (a == "--out") o.out = next();
    else if (a == "--dim") o.dim = std::stoull(next());
    else if (a == "--rounds") o.rounds = std::max(3, std::stoi(next()));
    else if (a == "--threads") o.threads = static_cast<unsigned>(std::stoul(next()));
    else throw gossip::ConfigError("unknown argument " + a + " (use --out FILE, --dim N, --rounds N, --threads N)");
  }
  return o;
}

// The shm design through the real TrainerBridge: one round = request -> read -> write -> reply.
class ShmRig {
 public:
  // node: the bridge's shared-memory name holds it, so two rigs in one process need different ones.
  // dtype: the trainer's ("float32", or "bfloat16": half the shared memory, converted to the float32 state).
  ShmRig(const fs::path& dir, std::size_t dim, unsigned threads, gossip::PeerId node, const std::string& dtype = "float32")
      : model_(Vec::Zero(static_cast<Eigen::Index>(dim))) {
    fs::create_directories(dir);
    gossip::daemon::TrainerBridgeOptions o;
    o.data_dir = dir;
    o.node = node;
    o.copy_threads = threads;
    o.rounds = 1'000'000;
    bridge_ = std::make_unique<gossip::daemon::TrainerBridge>(o);
    client_.set(zmq::sockopt::linger, 0);
    client_.connect(bridge_->endpoint());
    send(json{{"op", "attach"}, {"version", 1}, {"dim", dim}, {"dtype", dtype}}.dump());
    const json r = json::parse(serveUntilReply());
    if (r["op"] != "attached") throw gossip::Error("attach failed: " + r.dump());
    const int fd = open(r["shm"].get<std::string>().c_str(), O_RDWR);
    const bool bf16 = dtype == "bfloat16";
    bytes_ = 2 * dim * (bf16 ? 2 : 4);
    map_ = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (map_ == MAP_FAILED) throw gossip::Error("cannot map the bridge's shared memory");
    // The trainer's parameters, 0.5 (touches every page).
    if (bf16)
      std::fill_n(static_cast<std::uint16_t*>(map_), dim, std::uint16_t{0x3f00});
    else
      std::fill_n(static_cast<float*>(map_), dim, 0.5f);
  }
  ~ShmRig() { munmap(map_, bytes_); }
  // Mean time of the bridge's copies per round (its own clock): the rest of a round is the protocol.
  double copyMsPerRound() const {
    const auto& st = bridge_->stats();
    return st.rounds_served ? static_cast<double>(st.copy_ns) * 1e-6 / static_cast<double>(st.rounds_served) : 0.0;
  }

  // One round as the trainer sees it, from its request to the reply.
  double round(gossip::Round t) {
    const auto t0 = Clock::now();
    std::thread daemon([&] {
      while (!bridge_->hasRequest()) {
        bridge_->poll(0, &model_, t);
        if (!bridge_->hasRequest()) bridge_->waitReadable(1);
      }
      Vec g;
      bridge_->readRequest(model_, g);
      bridge_->finishRound(model_, t + 1, false);
      bridge_->poll(0, &model_, t + 1);
    });
    send(R"({"op":"mix"})");
    zmq::message_t m;
    (void)client_.recv(m);
    const double ms = msSince(t0);
    daemon.join();
    if (json::parse(m.to_string())["op"] != "mixed") throw gossip::Error("unexpected reply " + m.to_string());
    return ms;
  }

 private:
  void send(const std::string& s) { client_.send(zmq::buffer(s), zmq::send_flags::none); }
  std::string serveUntilReply() {
    zmq::message_t m;
    for (;;) {
      bridge_->poll(0, &model_, 0);
      if (client_.recv(m, zmq::recv_flags::dontwait)) return m.to_string();
      bridge_->waitReadable(1);
    }
  }
  Vec model_;
  std::unique_ptr<gossip::daemon::TrainerBridge> bridge_;
  zmq::context_t ctx_{1};
  zmq::socket_t client_{ctx_, zmq::socket_type::dealer};
  void* map_ = nullptr;
  std::size_t bytes_ = 0;
};

// The inline design: the parameters travel in the messages both ways.
class InlineRig {
 public:
  InlineRig(const fs::path& dir, std::size_t dim) : dim_(dim), params_(dim, 0.5f), model_(Vec::Zero(static_cast<Eigen::Index>(dim))) {
    const std::string ep = "ipc://" + (dir / "inline.sock").string();
    for (auto* s : {&router_, &dealer_}) s->set(zmq::sockopt::linger, 0);
    router_.bind(ep);
    dealer_.connect(ep);
  }
  double round() {
    const auto t0 = Clock::now();
    std::thread daemon([&] {
      zmq::message_t id, body;
      (void)router_.recv(id);
      (void)router_.recv(body);
      model_ = Eigen::Map<const Eigen::VectorXf>(static_cast<const float*>(body.data()), static_cast<Eigen::Index>(dim_)).cast<gossip::Real>();
      zmq::message_t reply(dim_ * 4);
      Eigen::Map<Eigen::VectorXf>(static_cast<float*>(reply.data()), static_cast<Eigen::Index>(dim_)) = model_.cast<float>();
      router_.send(id, zmq::send_flags::sndmore);
      router_.send(reply, zmq::send_flags::none);
    });
    // Zero-copy send of the trainer's buffer (pyzmq's copy=False does the same); the buffer must stay
    // untouched until libzmq is done with it, which the reply guarantees here.
    zmq::message_t req(params_.data(), dim_ * 4, [](void*, void*) {});
    dealer_.send(req, zmq::send_flags::none);
    zmq::message_t m;
    (void)dealer_.recv(m);
    std::memcpy(params_.data(), m.data(), dim_ * 4);  // into the trainer's tensors
    const double ms = msSince(t0);
    daemon.join();
    return ms;
  }

 private:
  std::size_t dim_;
  std::vector<float> params_;
  Vec model_;
  zmq::context_t dctx_{1}, tctx_{1};
  zmq::socket_t router_{dctx_, zmq::socket_type::router};
  zmq::socket_t dealer_{tctx_, zmq::socket_type::dealer};
};

}  // namespace

int main(int argc, char** argv) try {
  const Options o = parse(argc, argv);
  char tmpl[] = "/tmp/gossip-bench-bridge-XXXXXX";
  if (!mkdtemp(tmpl)) throw gossip::IoError("cannot create a temp dir");
  const fs::path dir = tmpl;
  const unsigned threads = gossip::daemon::copyThreads(o.threads);
  double shm1CopyMs = 0, shmCopyMs = 0;
  double shmBf16CopyMs = 0;
  std::vector<double> memcpyMs, memcpyThreadsMs, eigenMs, convert1Ms, convertMs, shm1Ms, shmMs, shmBf16Ms, inlineMs;
  {
    std::vector<float> a(o.dim, 0.5f), b(o.dim, 0.0f);
    Vec x = Vec::Zero(static_cast<Eigen::Index>(o.dim));
    const std::span<gossip::Real> xs(x.data(), o.dim);
    ShmRig shm1(dir / "one", o.dim, 1, 0);
    ShmRig shm(dir / "many", o.dim, threads, 1);
    ShmRig shmBf16(dir / "bf16", o.dim, threads, 2, "bfloat16");
    InlineRig inl(dir, o.dim);
    auto timed = [](std::vector<double>& into, auto&& f) {
      const auto t0 = Clock::now();
      f();
      into.push_back(msSince(t0));
    };
    for (int r = 0; r < o.rounds; ++r) {
      timed(memcpyMs, [&] { std::memcpy(b.data(), a.data(), o.dim * 4); });
      timed(memcpyThreadsMs, [&] {  // one contiguous chunk per thread, the first on this one, as param_copy
        const std::size_t per = (o.dim + threads - 1) / threads;
        std::vector<std::thread> helpers;
        for (unsigned k = 1; k < threads; ++k)
          helpers.emplace_back([&, k] {
            const std::size_t begin = std::min(o.dim, k * per);
            std::memcpy(b.data() + begin, a.data() + begin, (std::min(o.dim, begin + per) - begin) * 4);
          });
        std::memcpy(b.data(), a.data(), std::min(o.dim, per) * 4);
        for (auto& h : helpers) h.join();
      });
      timed(eigenMs, [&] {
        x = Eigen::Map<const Eigen::VectorXf>(a.data(), static_cast<Eigen::Index>(o.dim)).cast<gossip::Real>();
        Eigen::Map<Eigen::VectorXf>(b.data(), static_cast<Eigen::Index>(o.dim)) = x.cast<float>();
      });
      timed(convert1Ms, [&] {
        gossip::daemon::convertInto(std::span<const float>(a), xs, 1);
        gossip::daemon::convertInto(std::span<const gossip::Real>(xs), std::span<float>(b), 1);
      });
      timed(convertMs, [&] {
        gossip::daemon::convertInto(std::span<const float>(a), xs, threads);
        gossip::daemon::convertInto(std::span<const gossip::Real>(xs), std::span<float>(b), threads);
      });
      shm1Ms.push_back(shm1.round(static_cast<gossip::Round>(r)));
      shmMs.push_back(shm.round(static_cast<gossip::Round>(r)));
      shmBf16Ms.push_back(shmBf16.round(static_cast<gossip::Round>(r)));
      inlineMs.push_back(inl.round());
    }
    shm1CopyMs = shm1.copyMsPerRound();
    shmCopyMs = shm.copyMsPerRound();
    shmBf16CopyMs = shmBf16.copyMsPerRound();
  }
  fs::remove_all(dir);
  const double mc = median(memcpyMs);
  json j{{"bench", "trainer_bridge"},
         {"dim", o.dim},
         {"dtype", "float32"},
         {"param_bytes", o.dim * 4},
         {"rounds", o.rounds},
         {"threads", threads},
         {"hardware_threads", std::thread::hardware_concurrency()},
         {"statistic", "median over rounds, designs interleaved"},
         {"memcpy_ms", mc},
         {"memcpy_threads_ms", median(memcpyThreadsMs)},
         {"convert_eigen_ms", median(eigenMs)},
         {"convert_1thread_ms", median(convert1Ms)},
         {"convert_ms", median(convertMs)},
         {"shm_1thread_round_ms", median(shm1Ms)},
         {"shm_round_ms", median(shmMs)},
         {"shm_1thread_copy_mean_ms", shm1CopyMs},
         {"shm_copy_mean_ms", shmCopyMs},
         {"shm_bf16_round_ms", median(shmBf16Ms)},
         {"shm_bf16_copy_mean_ms", shmBf16CopyMs},
         {"inline_round_ms", median(inlineMs)},
         {"memcpy_threads_in_memcpys", median(memcpyThreadsMs) / mc},
         {"convert_eigen_in_memcpys", median(eigenMs) / mc},
         {"convert_1thread_in_memcpys", median(convert1Ms) / mc},
         {"convert_in_memcpys", median(convertMs) / mc},
         {"shm_1thread_in_memcpys", median(shm1Ms) / mc},
         {"shm_in_memcpys", median(shmMs) / mc},
         {"shm_bf16_in_memcpys", median(shmBf16Ms) / mc},
         {"inline_in_memcpys", median(inlineMs) / mc}};
  std::cout << j.dump(2) << "\n";
  if (!o.out.empty()) std::ofstream(o.out) << j.dump(2) << "\n";
  return 0;
} catch (const std::exception& e) {
  std::cerr << "bench_trainer_bridge: " << e.what() << "\n";
  return 2;
}
