#include "training/text_readers.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string_view>

#include "core/error.h"
#include "training/file_bytes.h"

namespace gossip::training {

using detail::LineCursor;
using detail::parseDouble;
using detail::parseUnsigned;
using detail::trim;

namespace {
[[noreturn]] void fail(const std::string& path, std::size_t line, const std::string& msg) {
  throw DataError(path + ":" + std::to_string(line) + ": " + msg);
}

std::string quoted(std::string_view s) {
  constexpr std::size_t kMax = 40;  // keep messages one short line even for garbage input
  std::string out;
  for (char c : s.substr(0, kMax)) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7F) {
      out += c;
    } else {  // binary junk, shown as \xNN
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 15];
    }
  }
  if (s.size() > kMax) out += "...";
  return "'" + out + "'";
}

// Splits on runs of blanks.
template <class F>
void forEachToken(std::string_view s, F&& f) {
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
    std::size_t j = i;
    while (j < s.size() && s[j] != ' ' && s[j] != '\t') ++j;
    if (j > i) f(s.substr(i, j - i));
    i = j;
  }
}

bool fitsFloat(double v) { return std::abs(v) <= std::numeric_limits<float>::max(); }

// The file as text, without a UTF-8 byte-order mark (spreadsheet exports start with one).
std::string_view asText(const std::vector<unsigned char>& bytes) {
  std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
  return text;
}
}  // namespace

void detail::assignLabels(Dataset& d, const std::vector<double>& raw, const std::vector<std::size_t>& lines,
                          const std::string& path, bool regression) {
  if (regression) {
    d.targets = raw;
    d.y.clear();
    d.classes = 0;
    return;
  }
  const bool plus_minus = std::all_of(raw.begin(), raw.end(), [](double v) { return v == 1.0 || v == -1.0; });
  d.y.resize(raw.size());
  int max_label = -1;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    const double v = raw[i];
    if (plus_minus) {
      d.y[i] = v > 0 ? 1 : 0;
    } else {
      if (v < 0 || v != std::floor(v) || v > 1e6)
        fail(path, lines[i], "label " + std::to_string(v) +
                                 " is not a class index (a non-negative integer, or -1/+1 for binary data); "
                                 "use regression for real-valued targets");
      d.y[i] = static_cast<std::int32_t>(v);
    }
    max_label = std::max(max_label, d.y[i]);
  }
  d.classes = plus_minus ? 2 : max_label + 1;
}

Dataset readLibsvm(const std::string& path, const TextReadOptions& opt) {
  const std::vector<unsigned char> bytes = detail::readFileBytes(path);
  // Sparse triplets first: the feature count is known only at the end.
  std::vector<double> labels;
  std::vector<std::size_t> lines;
  std::vector<std::size_t> row_start;
  std::vector<std::uint32_t> cols;
  std::vector<float> vals;
  std::uint64_t max_index = 0;
  LineCursor cur(asText(bytes));
  std::string_view line;
  while (cur.next(line)) {
    const std::size_t ln = cur.lineNumber();
    line = trim(line.substr(0, line.find('#')));
    if (line.empty()) continue;
    bool first = true;
    std::uint64_t prev = 0;
    row_start.push_back(cols.size());
    lines.push_back(ln);
    forEachToken(line, [&](std::string_view tok) {
      if (first) {
        const auto v = parseDouble(tok);
        if (!v) fail(path, ln, "bad label " + quoted(tok));
        labels.push_back(*v);
        first = false;
        return;
      }
      if (tok.starts_with("qid:")) return;  // svmlight ranking groups carry no feature
      const std::size_t colon = tok.find(':');
      if (colon == std::string_view::npos) fail(path, ln, "expected index:value, got " + quoted(tok));
      const auto idx = parseUnsigned(tok.substr(0, colon));
      if (!idx || *idx == 0 || *idx > std::numeric_limits<std::uint32_t>::max())
        fail(path, ln, "bad feature index " + quoted(tok.substr(0, colon)) + " (indices are 1-based)");
      if (*idx <= prev) fail(path, ln, "feature index " + std::to_string(*idx) + " is not ascending");
      const auto val = parseDouble(tok.substr(colon + 1));
      if (!val || !fitsFloat(*val)) fail(path, ln, "bad feature value " + quoted(tok.substr(colon + 1)));
      if (opt.features != 0 && *idx > opt.features)
        fail(path, ln, "feature index " + std::to_string(*idx) + " exceeds the configured " +
                           std::to_string(opt.features) + " features");
      prev = *idx;
      max_index = std::max(max_index, *idx);
      cols.push_back(static_cast<std::uint32_t>(*idx - 1));
      vals.push_back(static_cast<float>(*val));
    });
  }
  if (labels.empty()) throw DataError(path + ": no samples");
  row_start.push_back(cols.size());
  const std::size_t features = opt.features != 0 ? opt.features : static_cast<std::size_t>(max_index);
  if (features == 0) throw DataError(path + ": no features in any line");
  // The data set is dense: refuse sizes that cannot be meant instead of dying in the allocator.
  constexpr double kMaxDenseBytes = 8.0 * (1ull << 30);  // rcv1 dense is 3.8 GB, epsilon 3.2 GB
  const double dense_bytes = 4.0 * static_cast<double>(features) * static_cast<double>(labels.size());
  if (dense_bytes > kMaxDenseBytes)
    throw DataError(path + ": " + std::to_string(labels.size()) + " samples x " + std::to_string(features) +
                    " features would need " + std::to_string(static_cast<long long>(dense_bytes / (1 << 30))) +
                    " GiB as a dense matrix");

  Dataset d;
  d.X.setZero(static_cast<Eigen::Index>(labels.size()), static_cast<Eigen::Index>(features));
  for (std::size_t r = 0; r + 1 < row_start.size(); ++r)
    for (std::size_t k = row_start[r]; k < row_start[r + 1]; ++k) d.X(static_cast<Eigen::Index>(r), cols[k]) = vals[k];
  detail::assignLabels(d, labels, lines, path, opt.regression);
  return d;
}

Dataset readCsv(const std::string& path, const TextReadOptions& opt) {
  const std::vector<unsigned char> bytes = detail::readFileBytes(path);
  std::vector<double> labels;
  std::vector<std::size_t> lines;
  std::vector<float> values;  // row-major features
  std::size_t fields = 0;     // per line, fixed by the first data line
  std::size_t label_col = 0;
  bool skip_header = opt.header;
  std::vector<std::string_view> parts;
  LineCursor cur(asText(bytes));
  std::string_view line;
  while (cur.next(line)) {
    const std::size_t ln = cur.lineNumber();
    if (trim(line).empty()) continue;
    if (skip_header) {
      skip_header = false;
      continue;
    }
    parts.clear();
    for (std::size_t start = 0;;) {
      const std::size_t end = line.find(opt.delimiter, start);
      parts.push_back(trim(line.substr(start, end == std::string_view::npos ? end : end - start)));
      if (end == std::string_view::npos) break;
      start = end + 1;
    }
    if (fields == 0) {
      fields = parts.size();
      if (fields < 2) fail(path, ln, "need a label and at least one feature column, found 1 field");
      const long long col = opt.label_column < 0 ? static_cast<long long>(fields) + opt.label_column
                                                 : static_cast<long long>(opt.label_column);
      if (col < 0 || col >= static_cast<long long>(fields))
        throw ConfigError("data.label_column: " + std::to_string(opt.label_column) + " is outside the " +
                          std::to_string(fields) + " columns of " + path);
      label_col = static_cast<std::size_t>(col);
    } else if (parts.size() != fields) {
      fail(path, ln, "expected " + std::to_string(fields) + " fields, found " + std::to_string(parts.size()));
    }
    for (std::size_t c = 0; c < fields; ++c) {
      const auto v = parseDouble(parts[c]);
      if (!v || (c != label_col && !fitsFloat(*v)))
        fail(path, ln, "field " + std::to_string(c + 1) + ": not a finite float: " + quoted(parts[c]));
      if (c == label_col)
        labels.push_back(*v);
      else
        values.push_back(static_cast<float>(*v));
    }
    lines.push_back(ln);
  }
  if (labels.empty()) throw DataError(path + ": no samples");
  Dataset d;
  d.X = Eigen::Map<const FeatureMatrix>(values.data(), static_cast<Eigen::Index>(labels.size()),
                                        static_cast<Eigen::Index>(fields - 1));
  detail::assignLabels(d, labels, lines, path, opt.regression);
  return d;
}

}  // namespace gossip::training
