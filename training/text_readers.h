#pragma once
// Text data formats: LIBSVM/svmlight ("label idx:val ...", 1-based ascending indices, '#' comments) and
// CSV with one label column. Every malformed line is a DataError "file:line: what".
//
// Labels (classification): if every label of a file is -1 or +1 the file is binary and -1 -> 0, +1 -> 1;
// otherwise every label must be a non-negative integer and is used as the class index as it is (so a
// node's own file holding classes {3,7} keeps them as 3 and 7). classes = max label + 1.
// With `regression` the labels are real targets stored in Dataset::targets and classes = 0.
#include <cstdint>
#include <string>
#include <vector>

#include "training/dataset.h"

namespace gossip::training {

struct TextReadOptions {
  bool regression = false;
  std::size_t features = 0;  // LIBSVM: feature count; 0 = the largest index found in the file
  int label_column = 0;      // CSV: index of the label column; negative counts from the end (-1 = last)
  bool header = false;       // CSV: the first non-empty line holds column names
  char delimiter = ',';      // CSV
};

Dataset readLibsvm(const std::string& path, const TextReadOptions& opt);
Dataset readCsv(const std::string& path, const TextReadOptions& opt);

namespace detail {
// Applies the label rules above to raw label values; lines[i] is the source line of sample i.
void assignLabels(Dataset& d, const std::vector<double>& raw, const std::vector<std::size_t>& lines,
                  const std::string& path, bool regression);
}  // namespace detail

}  // namespace gossip::training
