#pragma once
// Process helpers of `gossipd cluster` (cmd_cluster.cc): starting a child with its output in a log file,
// describing how it ended, the last line of its log, and whether a port is free. Called on the supervisor's
// one thread.
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <sys/types.h>

namespace gossip::cmd {

// True when a TCP listener could bind ip:port now (the port is checked, not held: node 0 binds it a moment
// later, and should someone take it in between, node 0 stops with one line naming node.http).
bool portFree(const std::string& ip, std::uint16_t port);

// The last non-empty line of a text file ("" when it cannot be read).
std::string lastLine(const std::filesystem::path& file);

// Starts bin with args (and env, NAME -> value, added to ours), output appended to log. With ownGroup
// the child leads a process group of its own, so that a signal to -pid reaches everything it starts: a
// trainer is `/bin/sh -c CMD`, and a signal to the shell alone would leave CMD (python) running.
pid_t spawn(const std::string& bin, const std::vector<std::string>& args, const std::filesystem::path& log,
            const std::vector<std::pair<std::string, std::string>>& env = {}, bool ownGroup = false);

// "exited with code N", "killed by signal N" (a waitpid status).
std::string describeExit(int status);

}  // namespace gossip::cmd
