#pragma once
// Exception hierarchy and the invariant-check macro.
//
// Recovery contract (who catches what):
//  - ConfigError: bad configuration or command line. Caught in main(), printed as one line, exit code 2.
//  - DataError: unreadable or malformed input data file. Same handling as ConfigError.
//  - DecodeError (a ProtocolError): a malformed message or payload. The receiver drops the message,
//    counts it and carries on; the decoder guarantees it did not modify its output before throwing.
//  - IoError: a link is broken. The peer layer reconnects or drops the neighbour.
//  - Error from GOSSIP_CHECK: a broken internal invariant, i.e. a bug. Library code never aborts.
#include <sstream>
#include <stdexcept>
#include <string>

namespace gossip {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct ConfigError : Error {
  using Error::Error;
};
// Training diverged (non-finite model or gradient): a configuration problem (step size), so exit code 2.
struct DivergedError : ConfigError {
  using ConfigError::ConfigError;
};
struct DataError : Error {
  using Error::Error;
};
struct ProtocolError : Error {
  using Error::Error;
};
struct DecodeError : ProtocolError {
  using ProtocolError::ProtocolError;
};
struct IoError : Error {
  using Error::Error;
};
// The cluster refused this node (another cluster's identity, ...): retrying will not help. Exit code 3.
struct RefusedError : Error {
  using Error::Error;
};
// Nobody could be reached (no seed answered): retrying later may help. Exit code 4.
struct UnreachableError : Error {
  using Error::Error;
};

namespace detail {
template <class... Args>
std::string concat(Args&&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}
}  // namespace detail

}  // namespace gossip

// Throws gossip::Error naming the failed condition and where it failed.
#define GOSSIP_CHECK(cond, ...)                                                                     \
  do {                                                                                              \
    if (!(cond))                                                                                    \
      throw ::gossip::Error(::gossip::detail::concat("check failed: " #cond " at " __FILE__ ":",   \
                                                     __LINE__, " " __VA_OPT__(, ) __VA_ARGS__));    \
  } while (0)
