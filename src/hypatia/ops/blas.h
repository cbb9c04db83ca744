// blas ops.
#pragma once
#include "hypatia/graph/graph.h"

namespace hypatia {}  // namespace hypatia
