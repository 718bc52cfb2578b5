#pragma once
// What a node.data_dir holds, read without starting anything and without changing a byte there
// (`gossipd inspect DIR`, issue 28): before a restart, a `--fresh` or a deletion an operator can see which
// cluster and node.id the directory belongs to, which checkpoints verify and the newest one a restart would
// resume, whether the run finished, and whether a daemon holds the directory now.
//
// Read-only: nothing is created, moved or removed (the daemon's own start removes a cut-short
// ckpt-R.gsc.tmp; inspect only lists it). The lock is probed with a shared flock taken and dropped at once,
// so a daemon starting in that very instant may be told the directory is in use; it is, for a microsecond.
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

namespace gossip::daemon {

// The report as JSON (the fields are documented in docs/daemon.md, "gossipd inspect"). DataError when `dir`
// is not a directory or holds none of the files a node writes (`cluster`, `instance`, `checkpoints/`,
// `status.json`): it is then not a node.data_dir, or not one a node ever started in.
nlohmann::json inspectDataDir(const std::filesystem::path& dir);

// The report for people: a few lines, the verdict ("resumes at round R", "finished", "in use") first.
std::string describeDataDir(const nlohmann::json& report);

}  // namespace gossip::daemon
