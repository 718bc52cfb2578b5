#include "daemon/cli/process.h"

#include <csignal>
#include <fstream>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/error.h"

namespace gossip::cmd {
namespace fs = std::filesystem;

bool portFree(const std::string& ip, std::uint16_t port) {
  const bool v6 = ip.find(':') != std::string::npos;
  const int fd = ::socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);  // as the HTTP server does (Asio's default)
  bool ok = false;
  if (v6) {
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_port = htons(port);
    ok = ::inet_pton(AF_INET6, ip.c_str(), &a.sin6_addr) == 1 && ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  } else {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    ok = ::inet_pton(AF_INET, ip.c_str(), &a.sin_addr) == 1 && ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  }
  ::close(fd);
  return ok;
}

std::string lastLine(const fs::path& file) {
  std::ifstream in(file);
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty()) last = line;
  return last;
}

pid_t spawn(const std::string& bin, const std::vector<std::string>& args, const fs::path& log,
            const std::vector<std::pair<std::string, std::string>>& env, bool ownGroup) {
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(bin.c_str()));
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) throw ConfigError("--dir: cannot write '" + log.string() + "'");
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw Error("fork failed");
  if (pid == 0) {
    // The child dies with the launcher, even if the launcher is killed with SIGKILL.
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(1);
    if (ownGroup) ::setpgid(0, 0);
    for (const auto& [name, value] : env) ::setenv(name.c_str(), value.c_str(), 1);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::execv(bin.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(fd);
  if (ownGroup) ::setpgid(pid, pid);  // also here: a signal sent right after fork must find the group
  return pid;
}

std::string describeExit(int status) {
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "ended";
}

}  // namespace gossip::cmd
