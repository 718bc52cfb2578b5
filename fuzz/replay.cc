// fuzz_replay TARGET PATH...: runs every file under each PATH through a fuzz target, in the normal build
// (ctest runs the committed corpus and past crashes this way, also under ASan). Exit 0 when all pass; a
// broken contract aborts, naming the target.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "fuzz/targets.h"

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  if (argc < 3) {
    std::fprintf(stderr, "usage: fuzz_replay frame|codecs|engine|checkpoint|config PATH...\n");
    return 2;
  }
  const auto target = gossip::fuzz::targetByName(argv[1]);
  if (!target) {
    std::fprintf(stderr, "fuzz_replay: unknown target %s\n", argv[1]);
    return 2;
  }
  std::size_t files = 0;
  for (int a = 2; a < argc; ++a) {
    std::vector<fs::path> paths;
    if (fs::is_directory(argv[a])) {
      for (const auto& e : fs::recursive_directory_iterator(argv[a]))
        if (e.is_regular_file()) paths.push_back(e.path());
    } else {
      paths.emplace_back(argv[a]);
    }
    for (const auto& p : paths) {
      std::ifstream f(p, std::ios::binary);
      if (!f) {
        std::fprintf(stderr, "fuzz_replay: cannot read %s\n", p.c_str());
        return 2;
      }
      const std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
      target(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
      ++files;
    }
  }
  if (files == 0) {
    std::fprintf(stderr, "fuzz_replay: no input files\n");
    return 2;
  }
  std::printf("fuzz_replay %s: %zu inputs, all within contract\n", argv[1], files);
  return 0;
}
