#include "hypatia/testing/models.h"

#include <string>

#include "hypatia/grad/grad.h"
#include "hypatia/graph/constructors.h"
#include "hypatia/ops/blas.h"
#include "hypatia/ops/elemwise.h"
#include "hypatia/ops/nnet.h"
#include "hypatia/ops/reduce.h"

namespace hypatia::testing {

Updates Mlp::sgd(const Var& lr) const {
  Updates u;
  for (size_t i = 0; i < params.size(); ++i) u.push_back({params[i], sub(params[i], mul(grads[i], lr))});
  return u;
}

Mlp mlp(const Var& x, const Var& y, const std::vector<int64_t>& sizes,
        const std::function<NDArray(const Shape& shape, int layer, bool is_bias)>& init) {
  if (sizes.size() < 2) fail<ValueError>("testing::mlp: needs the input size and at least one layer's");
  Mlp m;
  Var h = x;
  const int layers = static_cast<int>(sizes.size()) - 1;
  for (int l = 0; l < layers; ++l) {
    const std::string n = std::to_string(l);  // (gcc 12 warns wrongly on "W" + std::to_string(l))
    Var w = shared(init({sizes[l], sizes[l + 1]}, l, false), std::string("W").append(n));
    Var b = shared(init({sizes[l + 1]}, l, true), std::string("b").append(n));
    m.params.push_back(w);
    m.params.push_back(b);
    Var a = add(dot(h, w), b);
    h = l + 1 < layers ? tanh(a) : softmax(a);
  }
  m.cost = mean(categorical_crossentropy(h, y));
  m.grads = grad(m.cost, m.params);
  return m;
}

}  // namespace hypatia::testing
