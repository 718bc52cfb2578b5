// Transport throughput (DESIGN.md §9): a large payload sent N times from one ZmqTransport to another in the
// same process over loopback TCP, against raw ZeroMQ PUSH/PULL moving the same bytes, measured in the same
// run (trials interleaved, best of each). Budget: the transport at >= 80% of raw PUSH/PULL.
//
// Both sides get the same treatment where it is fair: each endpoint has its own context (one libzmq I/O
// thread), the sender hands over the same buffer zero-copy. The transport additionally passes each received
// frame through its inbox (a large model frame in libzmq's own parts, uncopied: engine/transport.h,
// PayloadParts); that cost is part of what is measured.
// Throughput = payload bytes / (first send .. last frame received), 1e9 B = 1 GB. Writes JSON to --out.
#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>
#include <zmq.hpp>

#include "core/error.h"
#include "engine/frame.h"
#include "transport/zmq/zmq_transport.h"

using Clock = std::chrono::steady_clock;
using nlohmann::json;
namespace ge = gossip::engine;

namespace {

struct Options {
  std::string out;
  std::size_t mb = 64;
  int messages = 10;  // per trial
  int trials = 3;
  std::size_t kb = 0;     // payload in KiB; overrides mb when set
  bool exchange = false;  // measure a round's pattern instead: both ends send one payload, then receive one
  std::size_t part_kb = 0;  // --exchange: send the payload as a multipart message of parts this size (0: one part)
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
    else if (a == "--mb") o.mb = std::stoull(next());
    else if (a == "--messages") o.messages = std::max(1, std::stoi(next()));
    else if (a == "--trials") o.trials = std::max(1, std::stoi(next()));
    else if (a == "--kb") o.kb = std::stoull(next());
    else if (a == "--exchange") o.exchange = true;
    else if (a == "--part-kb") o.part_kb = std::stoull(next());
    else throw gossip::ConfigError("unknown argument " + a +
                                   " (use --out FILE, --mb N, --kb N, --messages N, --trials N, --exchange, --part-kb N)");
  }
  return o;
}

gossip::Bytes modelHeader(std::uint64_t seq, std::size_t bytes) {
  ge::FrameHeader h;
  h.kind = ge::FrameKind::Model;
  h.sender = 1;
  h.seq = seq;
  h.payload_bytes = static_cast<std::uint32_t>(bytes);
  gossip::Bytes out;
  ge::encodeFrameHeader(h, out);
  return out;
}

void receiveOne(gossip::peer::ZmqTransport& t, ge::RawFrame& f) {
  const auto until = Clock::now() + std::chrono::seconds(60);
  while (!t.receive(f)) {
    if (Clock::now() > until) throw gossip::IoError("bench: timed out waiting for a frame");
    t.waitReadable(std::chrono::milliseconds(100));
  }
}

// Seconds to move `messages` copies of payload from one ZmqTransport to another.
double timeTransport(const ge::SharedBytes& payload, int messages) {
  gossip::peer::ZmqTransport a(1, "tcp://127.0.0.1:0"), b(2, "tcp://127.0.0.1:0");
  a.addPeer(2, b.endpoint());
  ge::RawFrame f;
  a.send(2, modelHeader(0, 1), std::make_shared<const gossip::Bytes>(1));  // connect before timing
  receiveOne(b, f);
  const auto t0 = Clock::now();
  for (int i = 0; i < messages; ++i) a.send(2, modelHeader(static_cast<std::uint64_t>(i), payload->size()), payload);
  for (int i = 0; i < messages; ++i) {
    receiveOne(b, f);
    if (ge::payloadSize(f) != payload->size()) throw gossip::Error("bench: payload size changed in transit");
  }
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Seconds to move `messages` copies of payload over raw PUSH/PULL (zero-copy send, no copy on receive).
double timeRaw(const ge::SharedBytes& payload, int messages) {
  zmq::context_t ctxIn(1), ctxOut(1);
  zmq::socket_t pull(ctxIn, zmq::socket_type::pull), push(ctxOut, zmq::socket_type::push);
  pull.set(zmq::sockopt::linger, 0);
  push.set(zmq::sockopt::linger, 0);
  pull.bind("tcp://127.0.0.1:*");
  push.connect(pull.get(zmq::sockopt::last_endpoint));
  zmq::message_t m;
  push.send(zmq::str_buffer("x"), zmq::send_flags::none);  // connect before timing
  (void)pull.recv(m);
  std::thread receiver([&] {
    for (int i = 0; i < messages; ++i) {
      zmq::message_t r;
      (void)pull.recv(r);
    }
  });
  const auto t0 = Clock::now();
  for (int i = 0; i < messages; ++i) {
    zmq::message_t msg(const_cast<std::byte*>(payload->data()), payload->size(), nullptr, nullptr);
    push.send(msg, zmq::send_flags::none);
  }
  receiver.join();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Seconds for `rounds` exchanges over raw PUSH/PULL in both directions, each end in its own thread sending
// one payload and then receiving the other's: the transfer part of a gossip round between two nodes, with
// nothing else (the daemon's bench subtracts it from a daemon round). With `part` > 0 the payload goes as a
// multipart message of parts of that many bytes, each sent zero-copy, as the transport sends a large frame
// (transport/zmq/multipart.h): libzmq then receives into part-sized buffers instead of one allocation of the
// payload's size, which is faster for a payload of hundreds of MB (docs/results.md §18).
double timeRawExchange(const ge::SharedBytes& payload, int rounds, std::size_t part) {
  zmq::context_t ctxA(1), ctxB(1);
  zmq::socket_t pullA(ctxA, zmq::socket_type::pull), pushA(ctxA, zmq::socket_type::push);
  zmq::socket_t pullB(ctxB, zmq::socket_type::pull), pushB(ctxB, zmq::socket_type::push);
  for (auto* s : {&pullA, &pushA, &pullB, &pushB}) s->set(zmq::sockopt::linger, 0);
  pullA.bind("tcp://127.0.0.1:*");
  pullB.bind("tcp://127.0.0.1:*");
  pushA.connect(pullB.get(zmq::sockopt::last_endpoint));
  pushB.connect(pullA.get(zmq::sockopt::last_endpoint));
  zmq::message_t m;
  pushA.send(zmq::str_buffer("x"), zmq::send_flags::none);  // connect before timing
  pushB.send(zmq::str_buffer("x"), zmq::send_flags::none);
  (void)pullA.recv(m);
  (void)pullB.recv(m);
  const std::size_t step = part > 0 ? part : payload->size();
  auto side = [&](zmq::socket_t& push, zmq::socket_t& pull) {
    for (int i = 0; i < rounds; ++i) {
      for (std::size_t at = 0; at < payload->size(); at += step) {
        const std::size_t n = std::min(step, payload->size() - at);
        zmq::message_t msg(const_cast<std::byte*>(payload->data()) + at, n, nullptr, nullptr);
        push.send(msg, at + n < payload->size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
      }
      std::size_t got = 0;
      for (bool more = true; more;) {
        zmq::message_t r;
        (void)pull.recv(r);
        got += r.size();
        more = r.more();
      }
      if (got != payload->size()) throw gossip::Error("bench: payload size changed in transit");
    }
  };
  const auto t0 = Clock::now();
  std::thread b([&] { side(pushB, pullB); });
  side(pushA, pullA);
  b.join();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options opt = parse(argc, argv);
    auto buf = std::make_shared<gossip::Bytes>(opt.kb ? opt.kb << 10 : opt.mb << 20);
    for (std::size_t i = 0; i < buf->size(); ++i) (*buf)[i] = static_cast<std::byte>(i * 131 + (i >> 12));
    const ge::SharedBytes payload = buf;
    const double bytes = static_cast<double>(payload->size()) * opt.messages;
    if (opt.exchange) {
      double best = 1e300;
      for (int t = 0; t < opt.trials; ++t) best = std::min(best, timeRawExchange(payload, opt.messages, opt.part_kb << 10));
      json out;
      out["payload_bytes"] = payload->size();
      out["part_bytes"] = opt.part_kb << 10;
      out["exchanges_per_trial"] = opt.messages;
      out["raw_exchange_ms"] = 1000.0 * best / opt.messages;
      out["note"] = "raw PUSH/PULL both ways, each end sends one payload (in parts of part_bytes, 0 = one part) then "
                    "receives one; best trial";
      std::cout << out.dump(2) << "\n";
      return 0;
    }

    double bestTransport = 1e300, bestRaw = 1e300;
    json trials = json::array();
    for (int t = 0; t < opt.trials; ++t) {  // interleaved, so both see the same machine state
      const double raw = timeRaw(payload, opt.messages);
      const double tr = timeTransport(payload, opt.messages);
      bestRaw = std::min(bestRaw, raw);
      bestTransport = std::min(bestTransport, tr);
      trials.push_back({{"raw_pushpull_GBps", bytes / raw / 1e9}, {"zmq_transport_GBps", bytes / tr / 1e9}});
    }
    json out;
    out["payload_bytes"] = payload->size();
    out["messages_per_trial"] = opt.messages;
    out["trials"] = trials;
    out["throughput_unit"] = "payload bytes per second, best trial, 1e9 B = 1 GB";
    out["raw_pushpull_GBps"] = bytes / bestRaw / 1e9;
    out["zmq_transport_GBps"] = bytes / bestTransport / 1e9;
    out["ratio"] = bestRaw / bestTransport;
    out["budget_ratio"] = 0.8;
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
    std::cerr << "bench_transport: " << e.what() << "\n";
    return 2;
  }
}
