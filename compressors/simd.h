#pragma once
// GOSSIP_VECTOR_CLONES marks a codec's hot function to be compiled twice, for AVX2 and for the x86-64
// baseline the project builds for, with the version picked once at load time (GCC function
// multiversioning through an ifunc). `flatten` inlines the helpers (field packing driver, block pieces,
// uniform stream, the lambdas) into each clone, so their loops are vectorized for that clone's target;
// without it they would stay out of line at the baseline ISA. On one core this is what lets the
// quantizers reach the DESIGN.md §9 budget (a fraction of memcpy) without -march flags.
//
// Both clones must produce the same bytes: they run the same IEEE operations in the same order. The
// code has no floating-point reductions inside cloned functions whose order vectorization could change
// (the norms keep explicit lanes), and the avx2 target does not include FMA, so no a*b+c is contracted.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__) && \
    !defined(GOSSIP_NO_VECTOR_CLONES)
#define GOSSIP_VECTOR_CLONES __attribute__((target_clones("avx2", "default"), flatten))
#else
#define GOSSIP_VECTOR_CLONES
#endif
