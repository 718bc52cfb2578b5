#pragma once
// A 64-bit FNV-1a hash of bytes: fingerprints that tell apart texts differing by accident (a module's layout
// in a cluster identity, daemon/bridge/model_layout.cc; the identity in every membership message,
// membership/membership.cc). Not a defence against a forger (CurveZMQ is: docs/security.md).
// The offset basis is 1469598103934665603, a digit short of FNV's published 14695981039346656037: layout
// identities have been written with it into data directories' `cluster` files, so it stays.
#include <cstdint>
#include <string_view>

namespace gossip {

inline std::uint64_t fnv1a64(std::string_view s) {
  std::uint64_t h = 1469598103934665603ull;
  for (const char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace gossip
