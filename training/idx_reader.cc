#include "training/idx_reader.h"

#include <bit>
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

IdxHeader parseIdxHeader(const std::vector<unsigned char>& b, const std::string& what) {
  if (b.size() < 4) fail(what, b.size(), "file ends inside the 4-byte IDX magic");
  if (b[0] != 0 || b[1] != 0) fail(what, 0, "not an IDX file (magic must start with two zero bytes)");
  IdxHeader h;
  h.type = b[2];
  const std::size_t tsize = typeSize(h.type);
  if (tsize == 0) fail(what, 2, "unknown IDX type code " + std::to_string(h.type));
  const std::size_t ndims = b[3];
  if (ndims == 0) fail(what, 3, "IDX tensor with zero dimensions");
  h.data_offset = 4 + 4 * ndims;
  if (b.size() < h.data_offset) fail(what, b.size(), "file ends inside the dimension list");
  std::uint64_t count = 1;
  for (std::size_t i = 0; i < ndims; ++i) {
    const auto d = static_cast<std::uint32_t>(bigEndian(&b[4 + 4 * i], 4));
    h.dims.push_back(d);
    count *= d;
    // Checked before the product can overflow; the buffer-size test below bounds it for real.
    if (count > (std::uint64_t{1} << 40)) fail(what, 4 + 4 * i, "tensor dimensions too large");
  }
  const std::uint64_t need = h.data_offset + count * tsize;
  if (b.size() < need)
    fail(what, b.size(), "file ends early: the dimensions need " + std::to_string(need) + " bytes");
  if (b.size() > need) fail(what, need, std::to_string(b.size() - need) + " unexpected bytes after the data");
  h.count = static_cast<std::size_t>(count);
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

Dataset readIdx(const std::string& images_path, const std::string& labels_path) {
  const std::vector<unsigned char> ib = detail::readFileBytes(images_path);
  const IdxHeader img = parseIdxHeader(ib, images_path);
  const std::vector<unsigned char> lb = detail::readFileBytes(labels_path);
  const IdxHeader lab = parseIdxHeader(lb, labels_path);
  if (lab.dims.size() != 1)
    throw DataError(labels_path + ": byte 3: labels must be a 1-dimensional IDX tensor, found " +
                    std::to_string(lab.dims.size()) + " dimensions");
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
  d.y.resize(n);
  int max_label = -1;
  for (std::size_t i = 0; i < n; ++i) {
    const double v = idxValue(lb, lab, i);
    if (!(v >= 0) || v != std::floor(v) || v > std::numeric_limits<std::int32_t>::max() - 1)
      fail(labels_path, lab.data_offset + i * lab.valueSize(),
           "label " + std::to_string(v) + " is not a non-negative integer");
    d.y[i] = static_cast<std::int32_t>(v);
    max_label = std::max(max_label, d.y[i]);
  }
  d.classes = max_label + 1;
  return d;
}

}  // namespace gossip::training
