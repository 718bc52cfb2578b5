#include "training/idx_reader.h"

#include <bit>
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "training/file_bytes.h"

namespace gossip::training {

namespace {
std::size_t typeSize(unsigned char type) {
  switch (type) {
    case 0x08: case 0x09: return 1;
    case 0x0B: return 2;
    case 0x0C: case 0x0D: return 4;
    case 0x0E: return 8;
    default: return 0;
  }
}

std::uint64_t bigEndian(const unsigned char* p, std::size_t n) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < n; ++i) v = (v << 8) | p[i];
  return v;
}

[[noreturn]] void fail(const std::string& what, std::size_t offset, const std::string& msg) {
  throw DataError(what + ": byte " + std::to_string(offset) + ": " + msg);
}
}  // namespace

std::size_t IdxHeader::valueSize() const { return typeSize(type); }

namespace {
// Magic, type and dimensions from the first bytes of a file (size of them given); the data length is the
// caller's to check. The element count is bounded before it can overflow.
IdxHeader parseIdxDims(const unsigned char* b, std::size_t size, const std::string& what) {
  if (size < 4) fail(what, size, "file ends inside the 4-byte IDX magic");
  if (b[0] != 0 || b[1] != 0) fail(what, 0, "not an IDX file (magic must start with two zero bytes)");
  IdxHeader h;
  h.type = b[2];
  const std::size_t tsize = typeSize(h.type);
  if (tsize == 0) fail(what, 2, "unknown IDX type code " + std::to_string(h.type));
  const std::size_t ndims = b[3];
  if (ndims == 0) fail(what, 3, "IDX tensor with zero dimensions");
  h.data_offset = 4 + 4 * ndims;
  if (size < h.data_offset) fail(what, size, "file ends inside the dimension list");
  std::uint64_t count = 1;
  for (std::size_t i = 0; i < ndims; ++i) {
    const auto d = static_cast<std::uint32_t>(bigEndian(&b[4 + 4 * i], 4));
    h.dims.push_back(d);
    count *= d;
    // Checked before the product can overflow; the data length bounds it for real.
    if (count > (std::uint64_t{1} << 40)) fail(what, 4 + 4 * i, "tensor dimensions too large");
  }
  h.count = static_cast<std::size_t>(count);
  return h;
}
}  // namespace

IdxHeader parseIdxHeader(const std::vector<unsigned char>& b, const std::string& what) {
  IdxHeader h = parseIdxDims(b.data(), b.size(), what);
  const std::uint64_t need = h.data_offset + std::uint64_t{h.count} * h.valueSize();
  if (b.size() < need)
    fail(what, b.size(), "file ends early: the dimensions need " + std::to_string(need) + " bytes");
  if (b.size() > need) fail(what, need, std::to_string(b.size() - need) + " unexpected bytes after the data");
  return h;
}

double idxValue(const std::vector<unsigned char>& b, const IdxHeader& h, std::size_t i) {
  const unsigned char* p = &b[h.data_offset + i * typeSize(h.type)];
  switch (h.type) {
    case 0x08: return p[0];
    case 0x09: return static_cast<std::int8_t>(p[0]);
    case 0x0B: return static_cast<std::int16_t>(static_cast<std::uint16_t>(bigEndian(p, 2)));
    case 0x0C: return static_cast<std::int32_t>(static_cast<std::uint32_t>(bigEndian(p, 4)));
    case 0x0D: return std::bit_cast<float>(static_cast<std::uint32_t>(bigEndian(p, 4)));
    default: return std::bit_cast<double>(bigEndian(p, 8));
  }
}

namespace {
std::vector<std::int32_t> labelsFrom(const std::vector<unsigned char>& lb, const IdxHeader& lab,
                                     const std::string& labels_path) {
  std::vector<std::int32_t> y(lab.dims[0]);
  for (std::size_t i = 0; i < y.size(); ++i) {
    const double v = idxValue(lb, lab, i);
    if (!(v >= 0) || v != std::floor(v) || v > std::numeric_limits<std::int32_t>::max() - 1)
      fail(labels_path, lab.data_offset + i * lab.valueSize(),
           "label " + std::to_string(v) + " is not a non-negative integer");
    y[i] = static_cast<std::int32_t>(v);
  }
  return y;
}

void checkLabelRank(const IdxHeader& lab, const std::string& labels_path) {
  if (lab.dims.size() != 1)
    throw DataError(labels_path + ": byte 3: labels must be a 1-dimensional IDX tensor, found " +
                    std::to_string(lab.dims.size()) + " dimensions");
}
}  // namespace

Dataset readIdx(const std::string& images_path, const std::string& labels_path) {
  const std::vector<unsigned char> ib = detail::readFileBytes(images_path);
  const IdxHeader img = parseIdxHeader(ib, images_path);
  const std::vector<unsigned char> lb = detail::readFileBytes(labels_path);
  const IdxHeader lab = parseIdxHeader(lb, labels_path);
  checkLabelRank(lab, labels_path);
  const std::size_t n = img.dims[0];
  if (lab.dims[0] != n)
    throw DataError(labels_path + ": byte 4: " + std::to_string(lab.dims[0]) + " labels for " + std::to_string(n) +
                    " images in " + images_path);
  std::size_t features = 1;
  for (std::size_t i = 1; i < img.dims.size(); ++i) features *= img.dims[i];

  Dataset d;
  d.X.resize(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(features));
  float* dst = d.X.data();
  if (img.type == 0x08) {
    // The common case (MNIST-style images), decoded without the generic per-value switch.
    const unsigned char* src = ib.data() + img.data_offset;
    for (std::size_t i = 0; i < img.count; ++i) dst[i] = static_cast<float>(src[i]) * (1.0f / 255.0f);
  } else {
    for (std::size_t i = 0; i < img.count; ++i) {
      const double v = idxValue(ib, img, i);
      const auto f = static_cast<float>(v);
      if (!std::isfinite(f))
        fail(images_path, img.data_offset + i * img.valueSize(), "value not finite in float");
      dst[i] = f;
    }
  }
  d.y = labelsFrom(lb, lab, labels_path);
  const int max_label = d.y.empty() ? -1 : *std::max_element(d.y.begin(), d.y.end());
  d.classes = max_label + 1;
  return d;
}

std::vector<std::int32_t> readIdxLabels(const std::string& labels_path) {
  const std::vector<unsigned char> lb = detail::readFileBytes(labels_path);
  const IdxHeader lab = parseIdxHeader(lb, labels_path);
  checkLabelRank(lab, labels_path);
  return labelsFrom(lb, lab, labels_path);
}

IdxRowStream::IdxRowStream(const std::string& path) : in_(path) {
  // The magic, type and dimensions are checked as parseIdxHeader checks them; the data length is
  // checked as the rows arrive and in finish().
  std::vector<unsigned char> head(4);
  head.resize(in_.read(head.data(), 4));
  if (head.size() == 4) {
    head.resize(4 + 4 * std::size_t{head[3]});
    head.resize(4 + in_.read(head.data() + 4, head.size() - 4));
  }
  header_ = parseIdxDims(head.data(), head.size(), path);
  rows_ = header_.dims[0];
  features_ = 1;
  for (std::size_t i = 1; i < header_.dims.size(); ++i) {
    features_ *= header_.dims[i];
    // With no rows the tensor bound in parseIdxDims does not limit a row; a row is bounded on its own.
    if (features_ > (std::size_t{1} << 32)) fail(path, 4 + 4 * i, "IDX rows too large");
  }
  buf_.resize(features_ * header_.valueSize());
}

void IdxRowStream::fill() {
  if (done_ >= rows_) fail(in_.path(), in_.offset(), "read past the last row");
  if (in_.read(buf_.data(), buf_.size()) < buf_.size())
    fail(in_.path(), in_.offset(),
         "file ends early: the dimensions need " +
             std::to_string(header_.data_offset + rows_ * buf_.size()) + " bytes");
  ++done_;
}

void IdxRowStream::next(float* dst) {
  const std::size_t at = in_.offset();
  fill();
  if (header_.type == 0x08) {
    for (std::size_t j = 0; j < features_; ++j) dst[j] = static_cast<float>(buf_[j]) * (1.0f / 255.0f);
    return;
  }
  const std::size_t vs = header_.valueSize();
  IdxHeader one = header_;
  one.data_offset = 0;
  for (std::size_t j = 0; j < features_; ++j) {
    const auto f = static_cast<float>(idxValue(buf_, one, j));
    if (!std::isfinite(f)) fail(in_.path(), at + j * vs, "value not finite in float");
    dst[j] = f;
  }
}

void IdxRowStream::skip() { fill(); }

void IdxRowStream::finish() {
  while (done_ < rows_) fill();
  unsigned char extra[4096];
  std::size_t more = 0;
  for (std::size_t n; (n = in_.read(extra, sizeof extra)) > 0;) more += n;
  const std::size_t end = in_.offset() - more;
  in_.finish();
  if (more > 0) fail(in_.path(), end, std::to_string(more) + " unexpected bytes after the data");
}

}  // namespace gossip::training
