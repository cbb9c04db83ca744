// The MRGUniform kernel's frame (inputs checked, new state and sample prepared), shared by the
// reference and CPU kernels, which differ only in how the streams are walked.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "hypatia/backends/registry.h"
#include "hypatia/ops/random.h"

namespace hypatia {

/// Draws n samples into f (float32) or d (float64) from the C-contiguous (n_streams, 6) states.
using MrgGenerateFn = std::function<void(int32_t* states, int64_t n_streams, float* f, double* d, int64_t n)>;

/// Checks the inputs, prepares the new state (in place or a copy) and the sample, and fills them.
void mrg_uniform_run(const MRGUniform& op, const KernelArgs& args, const MrgGenerateFn& generate);

/// MultinomialFromUniform's and ChoiceFromUniform's inputs (pvals (rows, outcomes), unis, n read
/// on the host), checked (ValueError naming `who`): rows, outcomes and n.
struct FromUniformInputs {
  int64_t rows, outcomes, n;
};
FromUniformInputs check_from_uniform(const std::string& who, const KernelArgs& args);
/// ChoiceFromUniform without replacement cannot draw more values than there are outcomes.
void check_choice_count(const ChoiceFromUniform& op, const FromUniformInputs& in);

}  // namespace hypatia
