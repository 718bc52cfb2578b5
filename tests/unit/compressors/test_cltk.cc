// CLT-k shared supports (announcements, schedule, flooding on a graph) and error feedback with beta.
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <vector>

#include "tests/support/precision.h"
#include "compressors/compressor.h"
#include "compressors/error_feedback.h"
#include "compressors/select.h"
#include "compressors/shared_support.h"
#include "core/bytes.h"
#include "core/error.h"
#include "core/rng.h"

namespace gc = gossip::compress;
using gossip::ByteReader;
using gossip::Bytes;
using gossip::ByteWriter;
using gossip::DecodeError;
using gossip::Rng;

namespace {

std::unique_ptr<gc::Compressor> makeNamed(const char* name, std::uint32_t k) {
  gc::CompressorSpec s;
  s.name = name;
  s.k = k;
  return gc::makeCompressor(s);
}

std::vector<double> normals(Rng& rng, std::size_t d) {
  std::vector<double> x(d);
  for (auto& v : x) v = rng.normal() * std::exp(rng.normal());
  return x;
}

}  // namespace

TEST_CASE("cltk sends x restricted to the installed support - empty support sends nothing") {
  auto c = makeNamed("cltk", 3);
  auto* ctl = gc::cltkControl(*c);
  REQUIRE(ctl != nullptr);
  CHECK(gc::cltkControl(*makeNamed("topk", 3)) == nullptr);
  CHECK(ctl->supportSize(100) == 3);
  Rng rng(1);
  const auto x = normals(rng, 100);
  gc::Encoded e;
  c->encode(std::span<const double>(x), rng, e);
  CHECK(e.size() == 8 + 8);  // no support yet
  std::vector<double> y(100, 0.0);
  c->decodeAdd(e.view(), std::span<double>(y), 1.0);
  for (double v : y) CHECK(v == 0.0);

  ctl->setSupport(gc::chooseSupport(std::span<const double>(x), ctl->supportSize(100)));
  std::vector<std::uint32_t> ref;
  gc::selectTopK(std::span<const double>(x), 3, ref);
  CHECK(std::vector<std::uint32_t>(ctl->support().indices().begin(), ctl->support().indices().end()) == ref);
  // Now encode a different vector on the same support: values come from it, indices from the support.
  const auto z = normals(rng, 100);
  c->encode(std::span<const double>(z), rng, e);
  CHECK(e.size() == c->encodedBytes(100));
  CHECK(e.size() == 8 + 8 + 12);
  c->decodeAdd(e.view(), std::span<double>(y), 2.0);
  for (std::uint32_t i = 0, j = 0; i < 100; ++i) {
    const bool in = j < ref.size() && ref[j] == i;
    CHECK(y[i] == (in ? 2.0 * double(static_cast<float>(z[i])) : 0.0));
    j += in;
  }
}

TEST_CASE("support announcements round-trip and reject corruption") {
  Rng rng(2);
  for (std::uint32_t dim : {1u, 10u, 1000u}) {
    for (std::uint32_t k : {0u, 1u, dim / 2, dim}) {
      const auto x = normals(rng, dim);
      const auto s = gc::chooseSupport(std::span<const double>(x), k);
      Bytes buf;
      ByteWriter w(buf);
      gc::writeSupport(s, w);
      CHECK(buf.size() == gc::supportAnnouncementBytes(dim, k));
      ByteReader r(buf);
      CHECK(gc::readSupport(r, dim) == s);
      r.expectEnd();
      ByteReader wrongDim(buf);
      CHECK_THROWS_AS(gc::readSupport(wrongDim, dim + 1), DecodeError);
      Bytes bad = buf;
      bad[8] ^= std::byte{0x10};  // fingerprint
      ByteReader rb(bad);
      CHECK_THROWS_AS(gc::readSupport(rb, dim), DecodeError);
      ByteReader trunc(std::span<const std::byte>(buf).first(buf.size() - 1));
      if (buf.size() > 13) CHECK_THROWS_AS(gc::readSupport(trunc, dim), DecodeError);
    }
  }
  CHECK(gc::supportFingerprint(std::vector<std::uint32_t>{1, 2}, 10) !=
        gc::supportFingerprint(std::vector<std::uint32_t>{1, 3}, 10));
  CHECK(gc::supportFingerprint(std::vector<std::uint32_t>{1, 2}, 10) !=
        gc::supportFingerprint(std::vector<std::uint32_t>{1, 2}, 11));
}

TEST_CASE("SupportSchedule: cyclic leader - delayed use - duplicates and conflicts") {
  gc::SupportSchedule sch(5, 2);
  CHECK(sch.leader(0) == 0);
  CHECK(sch.leader(7) == 2);
  const gc::SharedSupport a({1, 2}, 10), b({3, 4}, 10);
  CHECK(sch.offer(0, a));
  CHECK_FALSE(sch.offer(0, a));                   // second copy via another neighbour
  CHECK_THROWS_AS(sch.offer(0, b), DecodeError);  // conflicting copy
  CHECK(sch.offer(1, b));
  CHECK(sch.takeFor(0).empty());
  CHECK(sch.takeFor(1).empty());
  CHECK(sch.takeFor(2) == a);
  CHECK_FALSE(sch.offer(0, a));  // already used: not forwarded again
  CHECK(sch.takeFor(3) == b);
  CHECK(sch.takeFor(4).empty());  // round 2's set never arrived
  CHECK_THROWS_AS(gc::SupportSchedule(0, 1), gossip::ConfigError);
}

namespace {

// Runs CLT-k on a ring of n nodes for `rounds` rounds with announcements flooded one hop per round and
// a schedule delay of `delay`. Returns the number of payloads rejected with DecodeError.
int floodRing(std::uint32_t n, std::uint32_t delay, std::uint32_t rounds, bool checkAgreement) {
  const std::uint32_t dim = 64, k = 4;
  std::vector<std::unique_ptr<gc::Compressor>> codec;
  std::vector<gc::SupportSchedule> sched;
  std::vector<std::map<std::uint64_t, Bytes>> outbox(n), nextOutbox(n);
  for (std::uint32_t i = 0; i < n; ++i) codec.push_back(makeNamed("cltk", k)), sched.emplace_back(n, delay);
  std::map<std::uint64_t, gc::SharedSupport> chosen;  // ground truth, per round
  Rng rng(3);
  int rejected = 0;
  for (std::uint32_t t = 0; t < rounds; ++t) {
    std::vector<gc::Encoded> msg(n);
    for (std::uint32_t i = 0; i < n; ++i) {
      // Runtime order within a round: the leader chooses and records first (so delay 0 works for a
      // single node), then every node installs the set scheduled for this round and encodes.
      auto* ctl = gc::cltkControl(*codec[i]);
      const auto p = normals(rng, dim);  // stands in for the error-compensated vector
      if (sched[i].leader(t) == i) {
        auto s = gc::chooseSupport(std::span<const double>(p), ctl->supportSize(dim));
        chosen[t] = s;
        sched[i].offer(t, s);
        Bytes ann;
        ByteWriter w(ann);
        gc::writeSupport(s, w);
        outbox[i][t] = std::move(ann);
      }
      ctl->setSupport(sched[i].takeFor(t));
      if (checkAgreement) {
        const auto want = t >= delay ? chosen.at(t - delay) : gc::SharedSupport{};
        CHECK(ctl->support() == want);
      }
      codec[i]->encode(std::span<const double>(p), rng, msg[i]);
    }
    for (std::uint32_t i = 0; i < n; ++i) {
      for (std::uint32_t j : {(i + 1) % n, (i + n - 1) % n}) {  // i receives from its two neighbours
        std::vector<double> acc(dim, 0.0);
        try {
          codec[i]->decodeAdd(msg[j].view(), std::span<double>(acc), 0.5);
        } catch (const DecodeError&) {
          ++rejected;
        }
        for (const auto& [round, ann] : outbox[j]) {
          ByteReader r(ann);
          if (sched[i].offer(round, gc::readSupport(r, dim))) nextOutbox[i][round] = ann;
        }
      }
    }
    outbox.swap(nextOutbox);
    for (auto& o : nextOutbox) o.clear();
  }
  return rejected;
}

}  // namespace

TEST_CASE("cltk on a ring: flooding with delay = diameter gives every node the same support") {
  for (std::uint32_t n : {1u, 2u, 3u, 7u, 8u}) {
    CAPTURE(n);
    const std::uint32_t diameter = n / 2;
    CHECK(floodRing(n, diameter, 3 * n + 4, true) == 0);
    // One round less and the farthest nodes have not heard of the set: their peers' payloads are refused.
    if (diameter > 0) CHECK(floodRing(n, diameter - 1, 3 * n + 4, false) > 0);
  }
}

TEST_CASE("cltk: the empty set is accepted by any receiver - announced sets by fingerprint") {
  const std::uint32_t dim = 32;
  auto sender = makeNamed("cltk", 4), receiver = makeNamed("cltk", 4);
  const gc::SharedSupport mine({0, 1, 2, 3}, dim), theirs({4, 9, 20, 31}, dim);
  gc::cltkControl(*receiver)->setSupport(mine);
  Rng rng(1);
  const auto x = normals(rng, dim);
  gc::Encoded e;
  sender->encode(std::span<const double>(x), rng, e);  // no set yet: the empty set, no values
  std::vector<double> acc(dim, 0.0);
  receiver->decodeAdd(e.view(), std::span<double>(acc), 1.0);
  CHECK(acc == std::vector<double>(dim, 0.0));
  gc::cltkControl(*sender)->setSupport(theirs);
  sender->encode(std::span<const double>(x), rng, e);
  CHECK_THROWS_AS(receiver->decodeAdd(e.view(), std::span<double>(acc), 1.0), DecodeError);
  gc::cltkControl(*receiver)->setAlsoDecodable({theirs});
  receiver->decodeAdd(e.view(), std::span<double>(acc), 1.0);
  for (std::uint32_t i = 0; i < dim; ++i) {
    const bool on = i == 4 || i == 9 || i == 20 || i == 31;
    CHECK(acc[i] == (on ? double(float(x[i])) : 0.0));
  }
}

TEST_CASE("cltk: a leading encode takes the top-k of its own input - fresh() has no set") {
  const std::uint32_t dim = 50;
  auto c = makeNamed("cltk", 5);
  auto* ctl = gc::cltkControl(*c);
  Rng rng(4);
  const auto x = normals(rng, dim);
  const gc::SharedSupport old({1, 2, 3, 4, 5}, dim);
  ctl->setSupport(old);
  ctl->leadNextEncode(false);
  gc::Encoded e;
  c->encode(std::span<const double>(x), rng, e);
  const auto want = gc::chooseSupport(std::span<const double>(x), 5);
  CHECK(ctl->takeChosen() == want);
  CHECK_FALSE(ctl->takeChosen().has_value());  // taken once
  CHECK(ctl->support() == old);                // encoded on the installed set
  c->encode(std::span<const double>(x), rng, e);
  CHECK_FALSE(ctl->takeChosen().has_value());  // the flag lasts one encode
  ctl->leadNextEncode(true);                   // delay 0: chosen and used at once
  c->encode(std::span<const double>(x), rng, e);
  CHECK(ctl->support() == want);
  auto copy = gc::cltkControl(*c)->fresh();
  CHECK(gc::cltkControl(*copy)->support().empty());
  CHECK(gc::cltkControl(*copy)->supportSize(dim) == 5);
  const gc::Compressor& asConst = *c;
  CHECK(gc::cltkControl(asConst) != nullptr);
  CHECK(gc::cltkControl(*makeNamed("topk", 5)) == nullptr);
}

TEST_CASE("SupportSchedule with a period: a set every 3 rounds - each used 3 rounds - late copies still taken") {
  gc::SupportSchedule sch(4, 2, 3);
  CHECK(sch.choosing(0));
  CHECK_FALSE(sch.choosing(1));
  CHECK(sch.choosing(6));
  CHECK(sch.leader(6) == 2);
  CHECK(sch.leader(12) == 0);
  CHECK_FALSE(sch.chosenFor(1).has_value());
  CHECK(*sch.chosenFor(2) == 0);
  CHECK(*sch.chosenFor(4) == 0);
  CHECK(*sch.chosenFor(5) == 3);
  const gc::SharedSupport a({1, 2}, 10), b({3, 4}, 10);
  CHECK(sch.offer(0, a));
  CHECK(sch.takeFor(2) == a);
  CHECK(sch.takeFor(3) == a);
  CHECK_FALSE(sch.offer(0, a));  // still in use: a duplicate, not forwarded again
  CHECK(sch.takeFor(4) == a);
  CHECK(sch.takeFor(5).empty());  // round 3's set has not arrived
  CHECK(sch.offer(3, b));         // late, but rounds 6 and 7 still use it: recorded and forwarded
  CHECK(sch.takeFor(6) == b);
  CHECK(sch.takeFor(7) == b);
  CHECK_FALSE(sch.offer(3, b));
  CHECK_FALSE(sch.offer(0, a));   // too old
  CHECK_THROWS_AS(gc::SupportSchedule(4, 2, 0), gossip::ConfigError);
}

TEST_CASE("SupportSchedule: conflicts() without recording - and a checkpoint round trip") {
  gc::SupportSchedule sch(4, 2);
  const gc::SharedSupport a({1, 2}, 10), b({3, 4}, 10);
  CHECK_FALSE(sch.conflicts(0, a));
  sch.offer(0, a);
  CHECK(sch.conflicts(0, b));
  CHECK_FALSE(sch.conflicts(0, a));
  sch.offer(1, b);
  Bytes saved;
  ByteWriter w(saved);
  sch.save(w);
  gc::SupportSchedule copy(4, 2);
  ByteReader r(saved);
  copy.load(r, 10);
  r.expectEnd();
  CHECK(copy.takeFor(2) == a);
  CHECK(copy.takeFor(3) == b);
  gc::SupportSchedule other(4, 2);
  ByteReader wrongDim(saved);
  CHECK_THROWS_AS(other.load(wrongDim, 11), DecodeError);
  ByteReader truncated(std::span<const std::byte>(saved).first(saved.size() - 1));
  CHECK_THROWS_AS(other.load(truncated, 10), DecodeError);
  CHECK(other.takeFor(2).empty());  // unchanged by the failed loads
}

TEST_CASE("ErrorFeedback beta=1: memory = p - c and transmitted + memory = sum of inputs") {
  auto c = makeNamed("topk", 3);
  const std::uint32_t d = 50;
  gc::ErrorFeedback ef(*c, d);
  Rng rng(4);
  std::vector<double> sumIn(d, 0.0), sumOut(d, 0.0);
  gc::Encoded e;
  for (int t = 0; t < 40; ++t) {
    const auto xd = normals(rng, d);
    const std::vector<gossip::Real> x(xd.begin(), xd.end());
    std::vector<gossip::Real> p(d);
    for (std::uint32_t i = 0; i < d; ++i) p[i] = ef.memory()[i] + x[i];
    REQUIRE(ef.compress(x, rng, e));
    // What a receiver reconstructs from the bytes; the memory is the state's precision (core/real.h).
    std::vector<gossip::Real> decoded(d, 0.0);
    c->decodeAdd(e.view(), std::span<gossip::Real>(decoded), 1.0);
    for (std::uint32_t i = 0; i < d; ++i) {
      CHECK(ef.memory()[i] == p[i] - decoded[i]);
      sumIn[i] += x[i];
      sumOut[i] += decoded[i];
    }
  }
  // Exact in real arithmetic; the sums are double, the memory's rounding is the state's.
  for (std::uint32_t i = 0; i < d; ++i)
    CHECK(sumOut[i] + ef.memory()[i] == doctest::Approx(sumIn[i]).epsilon(gossip::precision::tol(1e-12, 1e-5)));
  ef.reset();
  for (double m : ef.memory()) CHECK(m == 0.0);
  CHECK_THROWS_AS(gc::ErrorFeedback(*c, d, 0.0), gossip::ConfigError);
  CHECK_THROWS_AS(gc::ErrorFeedback(*c, d, 1.5), gossip::ConfigError);
}

TEST_CASE("ErrorFeedback beta<1 is a low-pass (exponential average) of the residuals") {
  auto c = makeNamed("topk", 2);
  const std::uint32_t d = 40;
  Rng data(5);
  std::vector<std::vector<gossip::Real>> xs;
  for (int t = 0; t < 300; ++t) {
    const auto x = normals(data, d);
    xs.emplace_back(x.begin(), x.end());
  }
  auto run = [&](double beta) {
    gc::ErrorFeedback ef(*c, d, beta);
    std::vector<double> m(d, 0.0);
    std::vector<gossip::Real> decoded(d);
    double meanSq = 0;
    gc::Encoded e;
    Rng rng(6);
    for (const auto& x : xs) {
      REQUIRE(ef.compress(x, rng, e));
      std::fill(decoded.begin(), decoded.end(), gossip::Real(0));
      c->decodeAdd(e.view(), std::span<gossip::Real>(decoded), 1.0);
      for (std::uint32_t i = 0; i < d; ++i) {
        const double residual = m[i] + x[i] - decoded[i];
        m[i] = (1.0 - beta) * m[i] + beta * residual;
        REQUIRE(ef.memory()[i] == doctest::Approx(m[i]).epsilon(gossip::precision::tol(1e-12, 1e-4)));
        meanSq += m[i] * m[i] / double(xs.size());
      }
    }
    return meanSq;
  };
  const double plain = run(1.0), filtered = run(0.3);
  // White-noise input: plain EF lets small entries pile up until they win top-k; the filter forgets
  // old residuals geometrically, so its memory stays markedly smaller.
  CHECK(filtered < 0.5 * plain);
}
