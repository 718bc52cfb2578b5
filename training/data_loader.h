#pragma once
// The [data] configuration section turned into data sets: reads the training file (and the optional test
// file) in one of the supported formats, reconciles their shapes, and fits feature scaling on the
// training set only. A node given its own file uses loadDataset with only `train` set.
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>
#include <string>

#include "training/dataset.h"
#include "training/scaling.h"

namespace gossip::training {

struct DataSpec {
  std::string format = "idx";        // idx | libsvm | csv
  std::string train;                 // required; idx: the images file
  std::string test;                  // optional; idx: the images file
  std::string train_labels;          // idx: labels file; empty = derived ("images-idx3" -> "labels-idx1")
  std::string test_labels;           // idx: as above for the test images
  int label_column = 0;              // csv: negative counts from the end (-1 = last column)
  bool header = false;               // csv: first non-empty line holds column names
  char delimiter = ',';              // csv
  std::string scaling = "none";      // none | minmax | standardize (fitted on train)
  std::size_t features = 0;          // libsvm: feature count; 0 = largest index in the training file
  int classes = 0;                   // 0 = inferred (max label + 1 over train and test)
  bool regression = false;           // libsvm/csv: labels are real-valued targets
  std::size_t limit = 0;             // keep only the first `limit` training samples (0 = all)
  // Check the labels with checkLabels() (off when the caller checks the union of several files itself).
  bool check_labels = true;
};

// Class labels must be 0..C-1 with every value present in the training set (C = number of distinct labels,
// which is the class count), and the test set may only use labels the training set has. A stray label such
// as 255 would otherwise silently make a 256-class model. DataError naming the file and the label.
// No-op for regression data (empty y).
void checkLabels(const Dataset& train, const std::string& train_path, const Dataset* test,
                 const std::string& test_path);

struct LoadedData {
  Dataset train;
  std::optional<Dataset> test;
  Scaler scaler;  // as fitted on train; apply it to any further data in the same feature space
  std::size_t train_rows_total = 0;  // training rows before any selection (after data.max_train)
};

// ConfigError for bad spec fields (naming data.<field>), DataError for unreadable or malformed files and
// for a train/test dimension or label mismatch. Both data sets end with the same `classes`.
LoadedData loadDataset(const DataSpec& spec);

// Chooses the training rows to keep from the labels alone: `labels` has every training row but no
// feature columns, its y and classes are final. Returns row indices in ascending order.
using RowSelector = std::function<std::vector<std::uint32_t>(const Dataset& labels)>;

// loadDataset, then only the training rows `select` returns and the first `test_max` test rows (0 = all),
// with bit-identical values (scaling is still fitted on every training row). For IDX data the image files
// are streamed, so the whole training set is never in memory: this is how a daemon holds only its shard.
// Other formats are loaded whole and then cut. DataError when `select` returns rows out of order or range.
LoadedData loadDatasetRows(const DataSpec& spec, const RowSelector& select, std::size_t test_max);

// What loadDataset(spec) will hold, read from the files' headers and the labels alone (no feature is
// decoded): for a memory estimate before a large load. Only for idx data (nullopt for the text formats,
// whose sizes are known only by parsing them). Errors as loadDataset's for the parts it reads.
struct DataShape {
  std::size_t train_rows = 0, test_rows = 0, features = 0;
  int classes = 0;
  double bytes() const;  // the loaded Datasets: float features and int labels
};
std::optional<DataShape> peekDataShape(const DataSpec& spec);

// The Fashion-MNIST files of the Debian package dataset-fashion-mnist.
DataSpec fashionMnistSpec(const std::string& dir = "/usr/share/datasets/fashion-mnist");

}  // namespace gossip::training
