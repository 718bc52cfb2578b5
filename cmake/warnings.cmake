# Warnings and sanitizers come from one INTERFACE target that every gossipd target links PRIVATE,
# so flags never leak into consumers and there is no global CMAKE_CXX_FLAGS editing.
add_library(gossip_warnings INTERFACE)
add_library(gossip::warnings ALIAS gossip_warnings)
target_compile_options(gossip_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wcast-align -Woverloaded-virtual
  -Wimplicit-fallthrough -Wno-maybe-uninitialized
  # Bit-identical arithmetic on every machine: replicas at both ends of an edge must decode to the same
  # values, so a*b+c must not be fused into an FMA on one build and not on another.
  -ffp-contract=off)
if(GOSSIP_WERROR)
  target_compile_options(gossip_warnings INTERFACE -Werror)
endif()
if(GOSSIP_SANITIZE)
  # -O1, as ASan's authors advise: the Debug build's -O0 made the sanitized unit tests take 6.4 minutes
  # (one simulator checkpoint test 164 s); -O1 keeps the reports exact enough and runs several times faster.
  target_compile_options(gossip_warnings INTERFACE -fsanitize=address,undefined -fno-omit-frame-pointer
    -fno-sanitize-recover=undefined -O1)
  target_link_options(gossip_warnings INTERFACE -fsanitize=address,undefined)
endif()
if(GOSSIP_TSAN)
  # ifunc resolvers (target_clones) run before the TSan runtime is initialised and crash when instrumented.
  target_compile_definitions(gossip_warnings INTERFACE GOSSIP_NO_VECTOR_CLONES)
  target_compile_options(gossip_warnings INTERFACE -fsanitize=thread -fno-omit-frame-pointer)
  target_link_options(gossip_warnings INTERFACE -fsanitize=thread)
endif()
if(GOSSIP_FUZZ)
  # libFuzzer builds (clang): coverage instrumentation plus ASan+UBSan on all library code; the fuzz
  # executables add -fsanitize=fuzzer at link time (fuzz/CMakeLists.txt).
  target_compile_definitions(gossip_warnings INTERFACE GOSSIP_NO_VECTOR_CLONES)
  target_compile_options(gossip_warnings INTERFACE -fsanitize=fuzzer-no-link,address,undefined
    -fno-sanitize-recover=undefined -fno-omit-frame-pointer -Wno-unknown-warning-option)
  target_link_options(gossip_warnings INTERFACE -fsanitize=address,undefined)
endif()
