// PayloadPool (engine/payload_pool.h): a buffer comes back only when its last holder lets go, whichever
// thread that is, and a buffer taken again is written only after the old holder's reads (TSan checks the
// ordering: this file is part of test_engine, which `make test` runs under ThreadSanitizer).
#include <doctest/doctest.h>

#include <atomic>
#include <thread>

#include "engine/payload_pool.h"
#include "engine/transport.h"

using namespace gossip;
using namespace gossip::engine;

TEST_CASE("a payload buffer returns to the pool when its last holder releases it") {
  auto pool = PayloadPool::create(2);
  auto a = pool->take();
  a->assign(1000, std::byte{1});
  const Bytes* where = a.get();
  SharedBytes held = a;  // a receiver (or a zero-copy send) still holds it
  a.reset();
  CHECK(pool->pooled() == 0);  // not back while someone holds it
  auto b = pool->take();
  CHECK(b.get() != where);
  held.reset();
  CHECK(pool->pooled() == 1);
  auto c = pool->take();
  CHECK(c.get() == where);
  CHECK(c->capacity() >= 1000);  // the capacity is what is reused
}

TEST_CASE("the pool keeps at most `keep` buffers and outlives its owner while buffers are out") {
  SharedBytes out;
  {
    auto pool = PayloadPool::create(1);
    auto x = pool->take(), y = pool->take();
    out = y;
    x.reset();
    y.reset();
  }  // the owner dropped the pool; `out` still returns into it
  out.reset();  // no crash, no leak (ASan)
  auto pool = PayloadPool::create(1);
  { auto x = pool->take(), y = pool->take(); }
  CHECK(pool->pooled() == 1);
}

TEST_CASE("a buffer released on another thread is reused without a race") {
  auto pool = PayloadPool::create(2);
  std::atomic<std::uint64_t> sum{0};
  std::thread reader;
  for (int round = 0; round < 200; ++round) {
    // The writer fills the next buffer while last round's "I/O thread" may still be reading its own: the
    // pool hands a buffer out again only after the reader dropped it, and TSan reports a race on the
    // bytes unless that release is ordered before the new writes (the reader is joined only afterwards).
    auto p = pool->take();
    p->assign(256, std::byte{static_cast<unsigned char>(round)});
    SharedBytes shared = p;
    p.reset();
    if (reader.joinable()) reader.join();
    reader = std::thread([held = std::move(shared), &sum]() mutable {
      std::uint64_t s = 0;
      for (std::byte b : *held) s += static_cast<std::uint8_t>(b);
      sum += s;
      held.reset();
    });
  }
  reader.join();
  CHECK(sum.load() > 0);
  CHECK(pool->pooled() >= 1);
}
