// MRG31k3p's step on many streams at once (SIMD lanes across streams), for MRGUniform's CPU
// kernel. Compiled once per Highway target, picked at run time. Same integers as mrg::next.
#pragma once
#include <cstddef>
#include <cstdint>

namespace hypatia::cpu {

/// One draw from each of `count` streams whose states are held as six arrays (x[w][j] is word w of
/// stream j's state): every state advances one step and k[j] gets stream j's combined integer in
/// [1, M1] (backends/mrg_generate.h's mrg::next, lane by lane).
void mrg_round(int32_t* const x[6], size_t count, int32_t* k);

}  // namespace hypatia::cpu
