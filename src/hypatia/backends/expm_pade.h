// scipy.linalg.expm's constants (Higham 2005), shared by the CPU's Expm (linalg_kernels.cpp) and
// the CUDA backend's (cuda/cuda_linalg_kernels.cpp): the Pade coefficients of degree 13, used on
// A / 2^s, and those of degrees 3, 5, 7 and 9 with the 1-norms up to which each is used.
#pragma once
#include <algorithm>
#include <cmath>

namespace hypatia::expm_pade {

inline constexpr double kB13[] = {64764752532480000.0,
                                  32382376266240000.0,
                                  7771770303897600.0,
                                  1187353796428800.0,
                                  129060195264000.0,
                                  10559470521600.0,
                                  670442572800.0,
                                  33522128640.0,
                                  1323241920.0,
                                  40840800.0,
                                  960960.0,
                                  16380.0,
                                  182.0,
                                  1.0};
inline constexpr double kThetas[] = {1.495585217958292e-002, 2.539398330063230e-001, 9.504178996162932e-001,
                                     2.097847961257068e+000};
inline constexpr int kDegrees[] = {3, 5, 7, 9};
inline constexpr double kB[4][10] = {
    {120.0, 60.0, 12.0, 1.0},
    {30240.0, 15120.0, 3360.0, 420.0, 30.0, 1.0},
    {17297280.0, 8648640.0, 1995840.0, 277200.0, 25200.0, 1512.0, 56.0, 1.0},
    {17643225600.0, 8821612800.0, 2075673600.0, 302702400.0, 30270240.0, 2162160.0, 110880.0, 3960.0, 90.0, 1.0}};
inline constexpr double kTheta13 = 5.371920351148152;

/// The index into kDegrees of the lowest degree whose bound the 1-norm is within; -1: degree 13.
inline int degree_index(double norm1) {
  for (int i = 0; i < 4; ++i)
    if (norm1 <= kThetas[i]) return i;
  return -1;
}
/// The squarings s of degree 13 (A / 2^s within its bound).
inline int squarings(double norm1) { return std::max(0, static_cast<int>(std::ceil(std::log2(norm1 / kTheta13)))); }

}  // namespace hypatia::expm_pade
