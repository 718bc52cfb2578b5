#pragma once
// ModelLayout: the names, shapes and dtypes of the tensors a trainer bound to the shared memory, in the
// order they sit there (docs/trainer.md, "Layout"). Issue 29: only the parameter count was checked, so two
// modules with the same count and another layer order were averaged coordinate by coordinate (they ended
// 124% apart), and nothing named the model's parts in model.npy.
//
// The layout travels in the trainer's attach ("layout": [[name, [shape...], dtype], ...]); the daemon keeps
// the first one in data_dir/model_layout.json (also the index of model.npy: each tensor's offset into it),
// refuses a later attach whose layout differs (error layout_mismatch, naming the first difference), and puts
// the layout in the cluster identity (daemon/node/cluster_identity.h), so a neighbour whose trainer bound
// another module is refused at join. An attach without a layout (bind_array, or a client from before
// layouts) is an unnamed flat vector: a layout of its own, which differs from every named one.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace gossip::daemon {

struct TensorLayout {
  std::string name;
  std::vector<std::uint64_t> shape;
  std::string dtype;  // the trainer's dtype name ("float32", ...)
  std::uint64_t size() const;  // the product of shape (1 for a scalar)
  bool operator==(const TensorLayout&) const = default;
};

struct ModelLayout {
  std::uint64_t dim = 0;
  std::vector<TensorLayout> tensors;  // empty: an unnamed flat vector of dim values
  bool operator==(const ModelLayout&) const = default;

  // The attach's "layout" field (absent: the unnamed layout of dim values). Returns the reason when the
  // field is malformed or its sizes do not add up to dim; nullopt when `out` holds it.
  static std::optional<std::string> parse(const nlohmann::json* field, std::uint64_t dim, ModelLayout& out);
  // [[name, [shape...], dtype], ...], the attach's form.
  nlohmann::json toJson() const;
  // The layout's part of the cluster identity: the compact JSON above while it stays short (up to ~80
  // tensors), so a refusal can name the tensor that differs; beyond that a 64-bit FNV-1a hash of it
  // ("fnv1a64:<hex>"), which keeps the identity within the membership's limit whatever the module.
  std::string identityValue() const;
};

// One line naming the first difference, e.g. `tensor 2 is "fc2.weight" [10, 128] float32 here,
// "fc2.weight" [10, 256] float32 there`; empty when equal.
std::string describeLayoutDifference(const ModelLayout& ours, const ModelLayout& theirs, std::string_view here,
                                     std::string_view there);
// The same for two identityValue()s (hashes of long layouts can only be said to differ).
std::string describeLayoutIdentityDifference(std::string_view ours, std::string_view theirs, std::string_view here,
                                             std::string_view there);

// The form of data_dir/model_layout.json (written by daemon/node/trainer_input.cc, atomically):
// {"dim": d, "tensors": [{"name", "shape", "dtype", "offset"}, ...]}, offsets in values from the start of
// model.npy. fromFile returns the reason when the text is not such a file.
std::string layoutFileText(const ModelLayout& layout);
std::optional<std::string> parseLayoutFile(std::string_view text, ModelLayout& out);

}  // namespace gossip::daemon
