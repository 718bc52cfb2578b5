// HandshakeFailure's log line (peer_transport.h).
#include "transport/peer/peer_transport.h"

#include <cstdio>

namespace gossip::peer {

std::string HandshakeFailure::describe(bool curveHere) const {
  const std::string who = incoming ? "a connection to this node's listening address (" + endpoint + ")" : endpoint;
  if (kind == Kind::Auth)
    return "the CurveZMQ handshake with " + who + " was refused: that node does not list this node's key (its "
           "keys_dir/allow.txt; docs/security.md), or it holds another cluster key";
  if (kind == Kind::Mechanism)
    return "the handshake with " + who + " failed: the two ends use different security mechanisms; this node runs with "
           "security.enable = " + (curveHere ? "true (CurveZMQ), so that one probably runs without it"
                                             : "false, so that one probably runs with CurveZMQ") +
           " (it must be the same on every node: docs/security.md)";
  const std::string here = std::string("this node runs with security.enable = ") + (curveHere ? "true" : "false");
  if (kind == Kind::Vague)  // whichever end reads the other's greeting first closes: the other sees only this
    return "the handshake with " + who + " failed: the other end closed the connection during it; if a gossipd "
           "runs there, its security.enable probably differs (" + here + "; docs/security.md)";
  char code16[16];
  std::snprintf(code16, sizeof code16, "0x%x", code);
  return "the handshake with " + who + " failed (ZMTP protocol error " + code16 +
         "): is another program, or a gossipd of another version, at that address? (" + here + ")";
}

}  // namespace gossip::peer
