#pragma once
// Where a membership life joins (node_build.cc makeMembership; the in-process node test uses the same rule).
// A first life: the configured seeds. A life begun by a rejoin after a death verdict: first the accuser whose
// side won (peer::Membership::rejoinVia: a member of the side that rejoins would hand the new life its stale
// verdicts), then the configured seeds, then everyone the previous life knew and who did not leave - not only
// the configured seeds (the first node has none): alive members, and those it declared dead itself while its
// network was cut (they may be back). Pure functions.
#include <string>
#include <vector>

#include "core/types.h"
#include "membership/membership.h"

namespace gossip::daemon {

// The endpoints a life that ends in a rejoin knew: every member but `self` and those who left.
std::vector<std::string> knownEndpoints(const std::vector<peer::MemberInfo>& members, PeerId self);

// The seeds in the order Membership tries them, each once: `rejoinVia` (empty: none), the configured seeds
// except this node's own addresses `own`, then `known`.
std::vector<std::string> joinSeeds(const std::string& rejoinVia, const std::vector<std::string>& configured,
                                   const std::vector<std::string>& own, const std::vector<std::string>& known);

}  // namespace gossip::daemon
