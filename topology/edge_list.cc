// Edge-list files: one undirected edge "a b" per line, ids are member ids. '#' starts a comment, blank
// lines are skipped, commas count as spaces. Edges that touch a non-alive id are dropped, because the
// file describes the full cluster and the view may be a subset of it. A file that cannot be read or
// that has a malformed line is a ConfigError naming the file and the line.
#include <charconv>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "core/error.h"
#include "topology/detail.h"

namespace gossip::topology::detail {

namespace {

[[noreturn]] void fail(const std::string& path, std::size_t line, const std::string& what) {
  throw ConfigError("edge list '" + path + "' line " + std::to_string(line) + ": " + what);
}

// Splits on spaces, tabs and commas; returns at most 3 tokens (3 means "too many").
std::size_t tokenize(std::string_view s, std::string_view (&tok)[3]) {
  std::size_t count = 0;
  std::size_t i = 0;
  auto sep = [](char c) { return c == ' ' || c == '\t' || c == ',' || c == '\r'; };
  while (i < s.size() && count < 3) {
    while (i < s.size() && sep(s[i])) ++i;
    if (i == s.size()) break;
    const std::size_t start = i;
    while (i < s.size() && !sep(s[i])) ++i;
    tok[count++] = s.substr(start, i - start);
  }
  return count;
}

PeerId parseId(std::string_view t, const std::string& path, std::size_t line) {
  PeerId v = 0;
  const auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || p != t.data() + t.size()) {
    fail(path, line, "'" + std::string(t) + "' is not a member id (an integer 0.." + std::to_string(PeerId(-1)) + ")");
  }
  return v;
}

}  // namespace

Graph edgeList(std::vector<PeerId> nodes, const std::string& path) {
  if (path.empty()) throw ConfigError("edge_file: an edge-list topology needs a file");
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw ConfigError("edge list '" + path + "': is a directory");
  std::ifstream in(path);
  if (!in) throw ConfigError("edge list '" + path + "': cannot open file");
  UndirectedBuilder b(nodes.size());
  Graph probe;  // only for indexOf over the sorted members
  probe.nodes = nodes;
  std::string text;
  std::size_t line = 0;
  while (std::getline(in, text)) {
    ++line;
    std::string_view s(text);
    if (const auto hash = s.find('#'); hash != std::string_view::npos) s = s.substr(0, hash);
    std::string_view tok[3];
    const std::size_t count = tokenize(s, tok);
    if (count == 0) continue;
    if (count != 2) fail(path, line, "expected two member ids, got '" + std::string(s) + "'");
    const PeerId a = parseId(tok[0], path, line);
    const PeerId c = parseId(tok[1], path, line);
    if (a == c) fail(path, line, "self-loop on id " + std::to_string(a));
    const std::ptrdiff_t ia = probe.indexOf(a), ic = probe.indexOf(c);
    if (ia < 0 || ic < 0) continue;
    b.addEdge(static_cast<std::uint32_t>(ia), static_cast<std::uint32_t>(ic));
  }
  if (in.bad()) throw ConfigError("edge list '" + path + "': read error after line " + std::to_string(line));
  return b.finish(std::move(nodes));
}

}  // namespace gossip::topology::detail
