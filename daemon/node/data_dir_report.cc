#include "daemon/node/data_dir_report.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <system_error>
#include <vector>

#include "core/error.h"
#include "core/serial.h"
#include "daemon/node/checkpoint_store.h"
#include "engine/checkpoint.h"

namespace gossip::daemon {
namespace {
namespace fs = std::filesystem;
using json = nlohmann::json;

std::optional<std::string> readText(const fs::path& f) {
  std::ifstream in(f, std::ios::binary);
  if (!in) return std::nullopt;
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The pid of a daemon holding `dir`/lock (daemon/node/data_dir_lock.h), probed with a shared flock that
// is dropped at once; null when nobody holds it (or there is no lock file).
json lockHolder(const fs::path& dir) {
  const fs::path f = dir / "lock";
  const int fd = ::open(f.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return nullptr;
  json holder = nullptr;
  if (::flock(fd, LOCK_SH | LOCK_NB) == 0) {
    ::flock(fd, LOCK_UN);
  } else if (errno == EWOULDBLOCK) {
    char buf[32] = {};
    const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
    const std::string s = n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
    const auto end = s.find_first_not_of("0123456789");
    holder = end == 0 || s.empty() ? json("unknown") : json(std::stoll(s.substr(0, end)));
  }
  ::close(fd);
  return holder;
}

// The `cluster` file's key=value lines (values are JSON where they parse, as the identity writes them).
json clusterFile(const fs::path& dir) {
  const auto text = readText(dir / "cluster");
  if (!text) return nullptr;
  json out = json::object();
  std::istringstream in(*text);
  for (std::string line; std::getline(in, line);) {
    const auto eq = line.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    const std::string v = line.substr(eq + 1);
    json parsed = json::parse(v, nullptr, /*allow_exceptions=*/false);
    out[line.substr(0, eq)] = parsed.is_discarded() ? json(v) : parsed;
  }
  return out;
}

// checkpoints/: every ckpt-<round>.gsc, newest first, verified as a restart would (container checksums
// and the run-state head); other *.gsc files (a restart ignores them) and cut-short writes listed apart.
void checkpoints(const fs::path& dir, json& report) {
  json files = json::array(), ignored = json::array();
  std::vector<std::pair<Round, fs::path>> found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir / "checkpoints", ec)) {
    const std::string name = e.path().filename().string();
    if (const auto r = CheckpointStore::roundOf(e.path())) {
      found.emplace_back(*r, e.path());
    } else if (name.ends_with(".gsc") || CheckpointStore::isCutShortWrite(name)) {
      ignored.push_back(name);
    }
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  json newest = nullptr;
  for (const auto& [round, path] : found) {
    json f = {{"file", path.filename().string()}, {"round", round}, {"bytes", fs::file_size(path, ec)}};
    try {
      const Bytes body = engine::readCheckpoint(path);
      ByteReader r(body, "checkpoint");
      const auto head = CheckpointStore::readRunHead(r);
      f["verifies"] = true;
      f["node"] = head.node;
      f["continues_at"] = head.next;
      if (newest.is_null()) newest = f;
    } catch (const std::exception& e) {
      f["verifies"] = false;
      f["error"] = e.what();
    }
    files.push_back(std::move(f));
  }
  report["checkpoints"] = std::move(files);
  report["ignored_files"] = std::move(ignored);
  report["newest_valid_checkpoint"] = std::move(newest);
}

// model.npy's element type and length, from its header (NumPy format 1.0: magic, version, header length,
// a Python dict literal), and model.json's round.
json modelFiles(const fs::path& dir) {
  std::ifstream in(dir / "model.npy", std::ios::binary);
  if (!in) return nullptr;
  char head[256] = {};
  in.read(head, sizeof head);
  const std::string h(head, static_cast<std::size_t>(in.gcount()));
  json m = {{"file", "model.npy"}};
  const auto field = [&](const std::string& key, char close) -> std::string {
    const auto at = h.find("'" + key + "': ");
    if (at == std::string::npos) return {};
    const auto from = at + key.size() + 4;
    const auto to = h.find(close, from + 1);
    return to == std::string::npos ? std::string() : h.substr(from, to - from + 1);
  };
  m["descr"] = field("descr", '\'');
  const std::string shape = field("shape", ')');
  const auto digits = shape.find_first_of("0123456789");
  m["values"] = digits == std::string::npos ? json(nullptr) : json(std::stoull(shape.substr(digits)));
  if (const auto meta = readText(dir / "model.json")) {
    const json j = json::parse(*meta, nullptr, false);
    if (j.is_object() && j.contains("round")) m["round"] = j["round"];
  }
  return m;
}

json statusFile(const fs::path& dir) {
  const auto text = readText(dir / "status.json");
  if (!text) return nullptr;
  const json s = json::parse(*text, nullptr, false);
  if (!s.is_object()) return json{{"error", "status.json is not JSON"}};
  json out = json::object();
  for (const char* k : {"state", "round", "rounds", "isolated", "loss", "accuracy"})
    if (s.contains(k)) out[k] = s[k];
  std::error_code ec;
  const auto written = fs::last_write_time(dir / "status.json", ec);
  if (!ec)
    out["age_seconds"] =
        std::chrono::duration_cast<std::chrono::seconds>(fs::file_time_type::clock::now() - written).count();
  return out;
}

json numberIn(const fs::path& f, int base) {
  const auto text = readText(f);
  if (!text) return nullptr;
  try {
    std::size_t used = 0;
    const auto v = std::stoull(*text, &used, base);
    return base == 16 ? json(text->substr(0, used)) : json(v);
  } catch (const std::exception&) {
    return json("unreadable");
  }
}

}  // namespace

json inspectDataDir(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw DataError("'" + dir.string() + "' is not a directory");
  const bool ours = fs::exists(dir / "cluster") || fs::exists(dir / "instance") ||
                    fs::is_directory(dir / "checkpoints") || fs::exists(dir / "status.json");
  if (!ours)
    throw DataError("'" + dir.string() + "' holds none of the files a node writes (cluster, instance, checkpoints/, "
                    "status.json): not a node.data_dir a node started in");
  json r = {{"dir", fs::absolute(dir).string()}};
  r["in_use_by_pid"] = lockHolder(dir);
  r["cluster"] = clusterFile(dir);
  r["instance"] = numberIn(dir / "instance", 16);
  r["incarnation"] = numberIn(dir / "incarnation", 10);
  checkpoints(dir, r);
  r["model"] = modelFiles(dir);
  r["status"] = statusFile(dir);
  // Finished: what a restart refuses to resume (its newest checkpoint at algorithm.rounds). The rounds are
  // the configuration's, so the node's last status says it: done, or a round at the run's end.
  const json& st = r["status"];
  json finished = nullptr;
  if (st.is_object() && st.contains("state"))
    finished = st["state"] == "done" ||
               (st.contains("round") && st.contains("rounds") && st["round"].is_number() && st["rounds"].is_number() &&
                st["round"].get<double>() >= st["rounds"].get<double>() && st["rounds"].get<double>() > 0);
  r["finished"] = finished;
  return r;
}

std::string describeDataDir(const json& r) {
  std::ostringstream o;
  o << r["dir"].get<std::string>() << ":\n";
  // The verdict first: what a `gossipd run` on the directory would do.
  const json& newest = r["newest_valid_checkpoint"];
  if (!r["in_use_by_pid"].is_null())
    o << "  in use: a gossipd (pid " << r["in_use_by_pid"].dump() << ") runs on it now\n";
  if (r["finished"] == true)
    o << "  the run is finished: a restart is refused (raise algorithm.rounds to train on)\n";
  else if (!newest.is_null())
    o << "  a restart resumes at round " << newest["continues_at"].dump() << " (" << newest["file"].get<std::string>() << ")\n";
  else if (!r["checkpoints"].empty())
    o << "  no checkpoint verifies: a restart is refused (move checkpoints/ away to start from round 0)\n";
  else
    o << "  no checkpoint: a restart starts at round 0\n";
  const json& c = r["cluster"];
  if (c.is_object()) {
    o << "  cluster:";
    for (const char* k : {"cluster.name", "node.id", "cluster.nodes", "algorithm.name", "compressor.name", "model.kind",
                          "trainer.mode", "model.dimension"})
      if (c.contains(k)) o << " " << k << "=" << (c[k].is_string() ? c[k].get<std::string>() : c[k].dump());
    o << " (" << c.size() << " identity keys in 'cluster')\n";
  } else {
    o << "  cluster: no 'cluster' file (any configuration may start here)\n";
  }
  if (!r["instance"].is_null())
    o << "  instance " << (r["instance"].is_string() ? r["instance"].get<std::string>() : r["instance"].dump())
      << ", incarnation " << r["incarnation"].dump() << "\n";
  for (const auto& f : r["checkpoints"]) {
    o << "  checkpoints/" << f["file"].get<std::string>() << ": " << f["bytes"].dump() << " bytes, ";
    if (f["verifies"] == true)
      o << "verifies (node " << f["node"].dump() << ", continues at round " << f["continues_at"].dump() << ")\n";
    else
      o << "does not verify: " << f["error"].get<std::string>() << "\n";
  }
  for (const auto& f : r["ignored_files"])
    o << "  checkpoints/" << f.get<std::string>() << ": not a checkpoint name this node writes (ignored by a restart)\n";
  if (const json& m = r["model"]; m.is_object())
    o << "  model.npy: " << m["values"].dump() << " values (" << m["descr"].get<std::string>() << ")"
      << (m.contains("round") ? ", round " + m["round"].dump() : std::string()) << "\n";
  if (const json& s = r["status"]; s.is_object() && s.contains("state"))
    o << "  status.json: " << s["state"].get<std::string>() << " at round " << s.value("round", json(nullptr)).dump()
      << " of " << s.value("rounds", json(nullptr)).dump() << ", written " << s.value("age_seconds", json(nullptr)).dump()
      << " s ago\n";
  return o.str();
}

}  // namespace gossip::daemon
