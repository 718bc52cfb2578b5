// The CurveZMQ key files of a cluster (curve_keys.h): generating, writing and reading them. No thread of its own;
// libzmq only generates key pairs and decodes Z85 (what the transport does with the keys is curve_auth.h's).
#include "transport/zmq/curve_keys.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace gossip::peer {

namespace fs = std::filesystem;

namespace {

constexpr std::size_t kZ85KeyChars = 40;

std::string rawKey(const std::string& z85, const std::string& where) {
  std::string raw(32, '\0');
  if (z85.size() != kZ85KeyChars || !zmq_z85_decode(reinterpret_cast<std::uint8_t*>(raw.data()), z85.c_str()))
    throw ConfigError(where + ": '" + z85 + "' is not a Z85 CurveZMQ key (40 characters)");
  return raw;
}

std::string readFile(const fs::path& p) {
  std::ifstream in(p);
  if (!in) throw ConfigError("security: cannot read " + p.string() + ": " + std::strerror(errno));
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A key file holds two lines: "public <z85>" and "secret <z85>".
CurveKeyPair readKeyPair(const fs::path& p) {
  std::istringstream in(readFile(p));
  CurveKeyPair k;
  std::string word, value;
  while (in >> word >> value) {
    if (word == "public") k.public_key = value;
    else if (word == "secret") k.secret_key = value;
    else throw ConfigError(p.string() + ": unknown entry '" + word + "' (expected public and secret)");
  }
  if (k.public_key.empty() || k.secret_key.empty())
    throw ConfigError(p.string() + ": expected a 'public' and a 'secret' line");
  rawKey(k.public_key, p.string());
  rawKey(k.secret_key, p.string());
  return k;
}

void writeSecretFile(const fs::path& p, const CurveKeyPair& k) {
  const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) throw IoError("cannot create " + p.string() + ": " + std::strerror(errno));
  const std::string text = "public " + k.public_key + "\nsecret " + k.secret_key + "\n";
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) && ::fsync(fd) == 0;
  ::close(fd);
  if (!ok) throw IoError("cannot write " + p.string());
}

fs::path nodeKeyPath(const fs::path& dir, PeerId id) { return dir / ("node-" + std::to_string(id) + ".key"); }

}  // namespace

CurveKeyPair generateKeyPair() {
  char pub[41], sec[41];
  if (zmq_curve_keypair(pub, sec) != 0)
    throw IoError("zmq_curve_keypair: " + std::string(zmq_strerror(zmq_errno())) +
                  " (is libzmq built with CURVE support?)");
  return {pub, sec};
}

CurveKeys loadCurveKeys(const fs::path& dir, PeerId id) {
  CurveKeys k;
  k.cluster = readKeyPair(dir / "cluster.key");
  k.node = readKeyPair(nodeKeyPath(dir, id));
  const fs::path allowPath = dir / "allow.txt";
  std::istringstream in(readFile(allowPath));
  std::string line;
  for (int lineNo = 1; std::getline(in, line); ++lineNo) {
    std::istringstream fields(line);
    std::string idText, key, extra;
    // Blank lines and lines starting with '#' are skipped; '#' elsewhere can be part of a Z85 key.
    if (!(fields >> idText) || idText[0] == '#') continue;
    const std::string where = allowPath.string() + ":" + std::to_string(lineNo);
    if (!(fields >> key) || (fields >> extra))
      throw ConfigError(where + ": expected '<node id> <public key>'");
    std::size_t used = 0;
    unsigned long nodeId = 0;
    try {
      nodeId = std::stoul(idText, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != idText.size() || nodeId > 0xFFFFFFFEul) throw ConfigError(where + ": '" + idText + "' is not a node id");
    if (!k.allowed.emplace(rawKey(key, where), static_cast<PeerId>(nodeId)).second)
      throw ConfigError(where + ": this key is listed twice");
  }
  const auto own = k.allowed.find(rawKey(k.node.public_key, nodeKeyPath(dir, id).string()));
  if (own == k.allowed.end() || own->second != id)
    throw ConfigError("security: the key in " + nodeKeyPath(dir, id).string() + " is not listed for node " +
                      std::to_string(id) + " in " + allowPath.string());
  return k;
}

std::size_t writeClusterKeys(const fs::path& dir, std::size_t nodes) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw IoError("cannot create " + dir.string() + ": " + ec.message());
  if (!fs::exists(dir / "cluster.key")) writeSecretFile(dir / "cluster.key", generateKeyPair());
  std::size_t created = 0;
  std::ostringstream allow;
  allow << "# gossipd allow-list: <node id> <node public key>. Every node needs this file, cluster.key\n"
           "# and its own node-<id>.key (docs/security.md).\n";
  for (PeerId id = 0; id < nodes; ++id) {
    const auto p = nodeKeyPath(dir, id);
    if (!fs::exists(p)) {
      writeSecretFile(p, generateKeyPair());
      ++created;
    }
    allow << id << ' ' << readKeyPair(p).public_key << '\n';
  }
  // Listed keys beyond `nodes` (from an earlier, larger run) stay listed.
  for (PeerId id = static_cast<PeerId>(nodes); fs::exists(nodeKeyPath(dir, id)); ++id)
    allow << id << ' ' << readKeyPair(nodeKeyPath(dir, id)).public_key << '\n';
  const fs::path tmp = dir / "allow.txt.tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << allow.str();
    if (!out.flush()) throw IoError("cannot write " + tmp.string());
  }
  fs::rename(tmp, dir / "allow.txt", ec);
  if (ec) throw IoError("cannot write " + (dir / "allow.txt").string() + ": " + ec.message());
  return created;
}

}  // namespace gossip::peer
