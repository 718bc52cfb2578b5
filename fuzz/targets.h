#pragma once
// Fuzz targets: each takes arbitrary bytes, feeds them to one decoder of untrusted input, and aborts (a
// crash for libFuzzer) when the decoder breaks its contract: an exception of a type the caller does not
// handle, a decoder that changed its output before rejecting, or anything the sanitizers catch. The same
// functions run in two builds: libFuzzer entry points (`make fuzz`, clang) and fuzz_replay, which runs the
// committed corpus and every past crash in the normal test build (and under ASan in `make test`).
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace gossip::compress {
class Compressor;
}

namespace gossip::fuzz {

// A frame as it comes off a socket: header decode (magic, version, kind, checksums, limits) and payload check.
int frame(const std::uint8_t* data, std::size_t size);
// Every codec's decodeAdd on an arbitrary payload: DecodeError only, and the output untouched when thrown.
int codecs(const std::uint8_t* data, std::size_t size);
// A sequence of hostile frames (raw bytes, or well-formed headers with valid checksums around fuzzed
// fields and payloads) into a linked-mode engine that is training with a real neighbour: nothing escapes.
int engine(const std::uint8_t* data, std::size_t size);
// A checkpoint file: container check, then the node state load. DataError or DecodeError only.
int checkpoint(const std::uint8_t* data, std::size_t size);
// A TOML config text through parse, schema and validation: ConfigError only.
int config(const std::uint8_t* data, std::size_t size);

// The codecs target's lgc decodes coded payloads only with a basis: installs a fixed one (the first two
// unit vectors of R^8) in an lgc codec; other codecs are left alone. The seeds use it to encode.
void installFuzzBasis(compress::Compressor& c);

using Target = int (*)(const std::uint8_t*, std::size_t);
// nullptr for an unknown name.
Target targetByName(std::string_view name);

// Prints the broken contract and aborts.
[[noreturn]] void fail(const char* target, const char* what);

}  // namespace gossip::fuzz
