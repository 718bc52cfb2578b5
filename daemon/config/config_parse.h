#pragma once
// Internal to the config library: applying parsed TOML and --set overrides onto a Config.
//
// Neither function throws for a user mistake: each problem is appended to `problems` as one message
// naming its key, and the offending key keeps its previous value, so one pass reports every mistake.
// Range and cross-key checks are NOT done here (validate() does them on the finished Config); only
// values that cannot even be stored (wrong type, negative into an unsigned field) are reported here.
#include <string>
#include <string_view>
#include <vector>

#include <toml++/toml.h>

#include "daemon/config/config.h"

namespace gossip::daemon::detail {

// Every [section] and key of a parsed document. Unknown sections and keys are reported, with a
// "did you mean" suggestion when one is close.
void applyTable(const toml::table& doc, Config& config, std::vector<std::string>& problems);

// One "section.key=value" override (see loadConfig for how the value is read).
void applySet(std::string_view set, Config& config, std::vector<std::string>& problems);

}  // namespace gossip::daemon::detail
