#include "training/data_loader.h"

#include <algorithm>

#include "core/error.h"
#include "training/idx_reader.h"
#include "training/text_readers.h"

namespace gossip::training {

namespace {
std::string idxLabelsPath(const std::string& images, const std::string& given, const char* field) {
  if (!given.empty()) return given;
  const std::string from = "images-idx3", to = "labels-idx1";
  const std::size_t slash = images.find_last_of('/');
  const std::size_t pos = images.rfind(from);
  if (pos == std::string::npos || (slash != std::string::npos && pos < slash))
    throw ConfigError(std::string(field) + ": needed for idx data when the image file name (" + images +
                      ") does not contain 'images-idx3'");
  return images.substr(0, pos) + to + images.substr(pos + from.size());
}

Dataset readOne(const DataSpec& spec, const std::string& path, const std::string& labels, const char* field,
                std::size_t features) {
  TextReadOptions opt;
  opt.regression = spec.regression;
  opt.features = features;
  opt.label_column = spec.label_column;
  opt.header = spec.header;
  opt.delimiter = spec.delimiter;
  if (spec.format == "idx") return readIdx(path, idxLabelsPath(path, labels, field));
  if (spec.format == "libsvm") return readLibsvm(path, opt);
  return readCsv(path, opt);
}

void truncate(Dataset& d, std::size_t n) {
  if (n == 0 || n >= d.samples()) return;
  d.X.conservativeResize(static_cast<Eigen::Index>(n), Eigen::NoChange);
  if (!d.y.empty()) d.y.resize(n);
  if (!d.targets.empty()) d.targets.resize(n);
}
}  // namespace

void checkLabels(const Dataset& train, const std::string& train_path, const Dataset* test,
                 const std::string& test_path) {
  if (train.y.empty()) return;
  std::vector<std::int32_t> labels(train.y);
  std::sort(labels.begin(), labels.end());
  labels.erase(std::unique(labels.begin(), labels.end()), labels.end());
  const auto classes = static_cast<std::int32_t>(labels.size());
  if (labels.back() != classes - 1) {
    std::int32_t missing = 0;
    while (std::binary_search(labels.begin(), labels.end(), missing)) ++missing;
    throw DataError(train_path + ": label " + std::to_string(labels.back()) + " occurs but label " +
                    std::to_string(missing) + " does not; class labels must be 0.." + std::to_string(classes - 1) +
                    " for the " + std::to_string(classes) + " distinct labels (gaps are not allowed)");
  }
  if (test == nullptr) return;
  for (std::int32_t v : test->y)
    if (v < 0 || v >= classes)
      throw DataError(test_path + ": label " + std::to_string(v) + " does not occur in the training data " +
                      train_path + " (labels 0.." + std::to_string(classes - 1) + ")");
}

LoadedData loadDataset(const DataSpec& spec) {
  if (spec.format != "idx" && spec.format != "libsvm" && spec.format != "csv")
    throw ConfigError("data.format: unknown '" + spec.format + "' (idx, libsvm, csv)");
  if (spec.train.empty()) throw ConfigError("data.train: no training file given");
  if (spec.classes < 0) throw ConfigError("data.classes: must be >= 0");
  if (spec.regression && spec.format == "idx") throw ConfigError("data.regression: not supported for idx data");
  if (spec.regression && spec.classes != 0) throw ConfigError("data.classes: must be 0 for regression data");
  const ScalingKind scaling = parseScaling(spec.scaling);

  LoadedData out;
  out.train = readOne(spec, spec.train, spec.train_labels, "data.train_labels", spec.features);
  truncate(out.train, spec.limit);
  if (!spec.test.empty()) {
    // A LIBSVM test file may simply not use the last features: read it in the training width, which
    // turns any larger index into a DataError.
    const std::size_t width = spec.format == "libsvm" ? out.train.features() : 0;
    out.test = readOne(spec, spec.test, spec.test_labels, "data.test_labels", width);
    if (out.test->features() != out.train.features())
      throw DataError(spec.test + ": " + std::to_string(out.test->features()) + " features, but the training file " +
                      spec.train + " has " + std::to_string(out.train.features()));
  }
  if (!spec.regression && spec.check_labels) checkLabels(out.train, spec.train, out.test ? &*out.test : nullptr, spec.test);
  if (!spec.regression) {
    int classes = out.train.classes;
    if (out.test) classes = std::max(classes, out.test->classes);
    if (spec.classes != 0) {
      if (classes > spec.classes)
        throw DataError(spec.train + ": labels go up to " + std::to_string(classes - 1) + " but data.classes is " +
                        std::to_string(spec.classes));
      classes = spec.classes;
    }
    out.train.classes = classes;
    if (out.test) out.test->classes = classes;
  }
  out.scaler = Scaler::fit(out.train, scaling);
  out.scaler.apply(out.train);
  if (out.test) out.scaler.apply(*out.test);
  return out;
}

DataSpec fashionMnistSpec(const std::string& dir) {
  DataSpec s;
  s.format = "idx";
  s.train = dir + "/train-images-idx3-ubyte.gz";
  s.test = dir + "/t10k-images-idx3-ubyte.gz";
  return s;
}

}  // namespace gossip::training
