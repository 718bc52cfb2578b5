#include "compressors/shared_support.h"

#include <string>
#include <utility>

#include "compressors/codec_base.h"
#include "compressors/select.h"
#include "compressors/sparse_common.h"
#include "core/error.h"

namespace gossip::compress {

// ---------------------------------------------------------------- support value

std::uint32_t supportFingerprint(std::span<const std::uint32_t> sortedIdx, std::uint32_t dim) {
  // splitmix64 finaliser chained over (dim, k, indices), folded to 32 bits. Not cryptographic: it only
  // has to make an accidental disagreement between two nodes' sets visible.
  auto mix = [](std::uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  std::uint64_t h = mix(0x636C746B00000000ull ^ dim);  // "cltk"
  h = mix(h ^ (sortedIdx.size() + 0x9E3779B97F4A7C15ull));
  for (std::uint32_t i : sortedIdx) h = mix(h + 0x9E3779B97F4A7C15ull + i);
  return static_cast<std::uint32_t>(h ^ (h >> 32));
}

SharedSupport::SharedSupport(std::vector<std::uint32_t> sortedIdx, std::uint32_t dim)
    : idx_(std::move(sortedIdx)), dim_(dim) {
  for (std::size_t j = 0; j < idx_.size(); ++j)
    GOSSIP_CHECK(idx_[j] < dim_ && (j == 0 || idx_[j - 1] < idx_[j]), "support must be increasing and < dim");
  fingerprint_ = supportFingerprint(idx_, dim_);
}

std::uint32_t SharedSupport::fingerprintFor(std::uint32_t dim) const {
  return idx_.empty() ? supportFingerprint({}, dim) : fingerprint_;
}

SharedSupport chooseSupport(std::span<const float> p, std::uint32_t k) {
  std::vector<std::uint32_t> idx;
  selectTopK(p, k, idx);
  return SharedSupport(std::move(idx), detail::checkedDim(p.size()));
}
SharedSupport chooseSupport(std::span<const double> p, std::uint32_t k) {
  std::vector<std::uint32_t> idx;
  selectTopK(p, k, idx);
  return SharedSupport(std::move(idx), detail::checkedDim(p.size()));
}

// ---------------------------------------------------------------- announcement

std::size_t supportAnnouncementBytes(std::uint32_t dim, std::uint32_t k) { return 12 + indexBytes(dim, k); }

void writeSupport(const SharedSupport& s, ByteWriter& w) {
  w.put(s.dim());
  w.put(s.size());
  w.put(s.fingerprintFor(s.dim()));
  writeIndices(s.indices(), s.dim(), w);
}

SharedSupport readSupport(ByteReader& r, std::uint32_t expectedDim) {
  const auto dim = r.get<std::uint32_t>();
  const auto k = r.get<std::uint32_t>();
  const auto fp = r.get<std::uint32_t>();
  if (dim != expectedDim)
    throw DecodeError("support announcement for dim " + std::to_string(dim) + ", expected " +
                      std::to_string(expectedDim));
  std::vector<std::uint32_t> idx;
  readIndices(r, dim, k, idx);  // validates k <= dim, order and range
  if (supportFingerprint(idx, dim) != fp) throw DecodeError("support announcement: fingerprint mismatch");
  return SharedSupport(std::move(idx), dim);
}

// ---------------------------------------------------------------- schedule

SupportSchedule::SupportSchedule(std::uint32_t nodes, std::uint32_t delay, std::uint32_t period)
    : nodes_(nodes), delay_(delay), period_(period) {
  if (nodes == 0) throw ConfigError("cltk: node count must be positive");
  if (period == 0) throw ConfigError("compressor.cltk_period must be >= 1");
}

bool SupportSchedule::offer(std::uint64_t chosenAt, SharedSupport s) {
  if (chosenAt < oldestUseful_) return false;
  auto [it, inserted] = pending_.try_emplace(chosenAt, std::move(s));
  if (!inserted && !(it->second == s))
    throw DecodeError("cltk: two different supports announced for round " + std::to_string(chosenAt));
  return inserted;
}

bool SupportSchedule::conflicts(std::uint64_t chosenAt, const SharedSupport& s) const {
  const auto it = pending_.find(chosenAt);
  return chosenAt >= oldestUseful_ && it != pending_.end() && !(it->second == s);
}

void SupportSchedule::save(ByteWriter& w) const {
  w.put<std::uint64_t>(oldestUseful_);
  w.put<std::uint64_t>(pending_.size());
  for (const auto& [round, s] : pending_) {
    w.put<std::uint64_t>(round);
    writeSupport(s, w);
  }
}

void SupportSchedule::load(ByteReader& r, std::uint32_t dim) {
  const auto oldest = r.get<std::uint64_t>();
  const auto count = r.get<std::uint64_t>();
  if (count > r.remaining() / 20) throw DecodeError("cltk schedule: set count exceeds the checkpoint");
  std::map<std::uint64_t, SharedSupport> pending;
  for (std::uint64_t i = 0; i < count; ++i) {
    const auto round = r.get<std::uint64_t>();
    if (round < oldest || (!pending.empty() && round <= pending.rbegin()->first))
      throw DecodeError("cltk schedule: rounds out of order");
    pending.emplace(round, readSupport(r, dim));
  }
  oldestUseful_ = oldest;
  pending_.swap(pending);
}

SharedSupport SupportSchedule::takeFor(std::uint64_t round) {
  const auto chosenAt = chosenFor(round);
  if (!chosenAt) return {};
  SharedSupport out;
  if (auto it = pending_.find(*chosenAt); it != pending_.end()) out = it->second;
  pending_.erase(pending_.begin(), pending_.lower_bound(*chosenAt));
  // The set stays useful while a later round of its period will use it: a copy that arrives late is
  // still recorded (and forwarded) for those rounds.
  const bool usedLater = chosenFor(round + 1) == chosenAt;
  if (!usedLater) pending_.erase(*chosenAt);
  oldestUseful_ = usedLater ? *chosenAt : *chosenAt + 1;
  return out;
}

// ---------------------------------------------------------------- codec

namespace {

class Cltk final : public detail::CodecBase<Cltk>, public CltkControl {
 public:
  explicit Cltk(const CompressorSpec& spec) : spec_(spec), count_(spec, "cltk") {}

  std::string_view name() const override { return count_.name(); }
  CodecId codec() const override { return CodecId::SharedSupport; }
  bool unbiased() const override { return false; }
  // Nominal: k/d is what a support independent of x achieves in expectation. There is no worst-case
  // bound (a support disjoint from x's mass transmits nothing); ScaleCom relies on the leader's top-k
  // overlapping the other nodes' large entries. See docs/cltk.md.
  Quality quality(std::uint32_t dim) const override {
    return {Quality::Kind::Contraction, dim == 0 ? 1.0 : double(count_.k(dim)) / double(dim)};
  }
  // Exact for the installed support; for another dimension, the size once a k-entry set is installed.
  std::size_t encodedBytes(std::uint32_t dim) const override {
    const std::uint32_t k = (!support_.empty() && support_.dim() == dim) ? support_.size() : count_.k(dim);
    return kCodecHeaderBytes + 8 + 4ull * k;
  }

  void setSupport(SharedSupport s) override { support_ = std::move(s); }
  void setAlsoDecodable(std::vector<SharedSupport> sets) override { also_ = std::move(sets); }
  const SharedSupport& support() const override { return support_; }
  std::uint32_t supportSize(std::uint32_t dim) const override { return count_.k(dim); }
  void leadNextEncode(bool useNow) override {
    lead_ = true;
    useNow_ = useNow;
  }
  std::optional<SharedSupport> takeChosen() override { return std::exchange(chosen_, std::nullopt); }
  std::unique_ptr<Compressor> fresh() const override { return std::make_unique<Cltk>(spec_); }

  template <class T>
  void encodeT(std::span<const T> x, Rng&, Encoded& out) const {
    const std::uint32_t dim = detail::checkedDim(x.size());
    if (lead_) {
      lead_ = false;
      chosen_ = chooseSupport(x, count_.k(dim));
      if (useNow_) support_ = *chosen_;
    }
    GOSSIP_CHECK(support_.empty() || support_.dim() == dim, "cltk support installed for dim ", support_.dim(),
                 ", encoding dim ", dim);
    detail::writeHeader(out, codec(), 0, dim, encodedBytes(dim));
    ByteWriter w(out.bytes);
    w.put(support_.size());
    w.put(support_.fingerprintFor(dim));
    detail::writeValues(x, support_.indices(), w);
  }

  template <class T>
  void decodeAddT(std::span<const std::byte> p, std::span<T> acc, double scale) const {
    ByteReader r(p, "cltk payload");
    const auto h = detail::readHeader(r, codec(), acc.size());
    if (h.param != 0) throw DecodeError("cltk payload: unexpected header param " + std::to_string(h.param));
    const auto k = r.get<std::uint32_t>();
    const auto fp = r.get<std::uint32_t>();
    // The empty set: the sender had no agreed set this round; it adds nothing, whatever ours is.
    if (k == 0 && fp == supportFingerprint({}, h.dim)) {
      r.expectEnd();
      return;
    }
    const SharedSupport* s = matching(k, fp, h.dim);
    if (!s)
      throw DecodeError("cltk payload: sender's support (k " + std::to_string(k) + ") differs from the local one (k " +
                        std::to_string(support_.size()) + ")");
    const auto values = r.take(4ull * k);
    r.expectEnd();
    detail::checkFiniteValues(values, "cltk");
    detail::scatterAdd(values, s->indices(), scale, acc);
  }

 private:
  // The known set a payload of k values with fingerprint fp (for a vector of dim) was encoded on, or null.
  const SharedSupport* matching(std::uint32_t k, std::uint32_t fp, std::uint32_t dim) const {
    const auto fits = [&](const SharedSupport& s) {
      return (s.empty() || s.dim() == dim) && s.size() == k && s.fingerprintFor(dim) == fp;
    };
    if (fits(support_)) return &support_;
    for (const auto& s : also_)
      if (fits(s)) return &s;
    return nullptr;
  }

  CompressorSpec spec_;
  detail::SparseCount count_;
  mutable SharedSupport support_;  // mutable: a leader with delay 0 installs its choice inside encode
  std::vector<SharedSupport> also_;
  // Leader bookkeeping, written by the (const) encode: a cltk codec belongs to one node (header).
  mutable bool lead_ = false;
  mutable bool useNow_ = false;
  mutable std::optional<SharedSupport> chosen_;
};

}  // namespace

std::unique_ptr<Compressor> makeCltk(const CompressorSpec& spec) { return std::make_unique<Cltk>(spec); }

CltkControl* cltkControl(Compressor& c) { return dynamic_cast<CltkControl*>(&c); }
const CltkControl* cltkControl(const Compressor& c) { return dynamic_cast<const CltkControl*>(&c); }

}  // namespace gossip::compress
