#pragma once
// Moving a trainer's parameters between its shared memory and the algorithm's state (Real, core/real.h)
// (daemon/bridge/trainer_bridge.h). This is the whole per-round cost of the bridge besides two small messages, so
// it is written for memory bandwidth (bench/bench_trainer_bridge.cc, docs/results.md §10):
//  - streaming (non-temporal) stores: the destination is not read first (a plain store loop reads every
//    destination line before writing it, a third more traffic), and the values go to memory, not into the
//    caches the next pass would have to evict. Measured before choosing: a conversion followed by a pass
//    that reads its output was faster with streaming stores than with plain ones, so the cost is not just
//    moved to the reader.
//  - several threads for a large model: one core cannot convert as fast as the memory moves the bytes
//    (two threads convert 1.3-1.5x faster than one here, while two threads copy no faster than one),
//    and the trainer, the only other user of the machine's cores in that moment, is blocked waiting for
//    the reply.
// SSE2 only, the x86-64 baseline, so the binary runs on every x86-64 machine without dispatch (wider vectors
// were not tried: the threads were the larger win). Results are bit-identical to static_cast (round to
// nearest, the default rounding mode) on every platform.
#include <cstddef>
#include <cstdint>
#include <span>

namespace gossip::daemon {

// The threads a conversion uses: `configured` (trainer.copy_threads), or with 0 the machine's cores up to 4.
unsigned copyThreads(unsigned configured);

// dst[i] = src[i]; the spans must have equal sizes and must not overlap. Vectors below ~1M values use one
// thread whatever `threads` says: starting a thread would cost more than it saves.
void widenInto(std::span<const float> src, std::span<double> dst, unsigned threads);
void narrowInto(std::span<const double> src, std::span<float> dst, unsigned threads);
void copyInto(std::span<const double> src, std::span<double> dst, unsigned threads);
void copyInto(std::span<const float> src, std::span<float> dst, unsigned threads);

// dst = src for any pair of float/double: a copy when the types agree, a conversion otherwise. The node's state
// is Real (core/real.h), the trainer's region float32 or float64, so the bridge calls this both ways.
inline void convertInto(std::span<const float> src, std::span<float> dst, unsigned threads) { copyInto(src, dst, threads); }
inline void convertInto(std::span<const double> src, std::span<double> dst, unsigned threads) { copyInto(src, dst, threads); }
inline void convertInto(std::span<const float> src, std::span<double> dst, unsigned threads) { widenInto(src, dst, threads); }
inline void convertInto(std::span<const double> src, std::span<float> dst, unsigned threads) { narrowInto(src, dst, threads); }

// bfloat16, the upper half of a float32 (a trainer's torch.bfloat16 parameters), held as its 16 bits.
// Widening is exact; narrowing rounds to nearest, ties to even, as torch's .to(torch.bfloat16) does (a
// NaN stays a NaN, quieted; a value beyond bfloat16's range becomes an infinity). From double the value is
// rounded to float first (the float64 build only): rarely a double rounding, at most one bfloat16 ulp.
void convertInto(std::span<const std::uint16_t> src, std::span<float> dst, unsigned threads);
void convertInto(std::span<const std::uint16_t> src, std::span<double> dst, unsigned threads);
void convertInto(std::span<const float> src, std::span<std::uint16_t> dst, unsigned threads);
void convertInto(std::span<const double> src, std::span<std::uint16_t> dst, unsigned threads);

// One value each way (the kernels' scalar rule; exposed for tests).
float bf16ToFloat(std::uint16_t b);
std::uint16_t floatToBf16(float f);

}  // namespace gossip::daemon
