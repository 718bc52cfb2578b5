#pragma once
// MembershipView: what the node's lifecycle (lifecycle.h) asks of membership. The daemon's is the
// MembershipRunner (membership on its own thread, membership_runner.h); the in-process node test
// (tests/unit/daemon/test_node_inprocess.cc) gives a peer::Membership it steps on its own fake clock.
// Each call returns a snapshot; an implementation says which threads may call it.
#include <vector>

#include "engine/view.h"
#include "membership/membership.h"

namespace gossip::daemon {

class MembershipView {
 public:
  virtual ~MembershipView() = default;
  virtual bool joined() const = 0;                     // a member answered our Join
  virtual bool isolated() const = 0;                   // peer::Membership::isolated
  virtual std::vector<engine::Member> alive() const = 0;  // Alive + Suspect, self included, sorted by id
  virtual peer::MembershipStats stats() const = 0;
};

}  // namespace gossip::daemon
