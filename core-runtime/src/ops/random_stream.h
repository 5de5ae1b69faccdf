// random_stream.h — the Philox stream of one random op call, for front functions whose kernels
// draw their own numbers (attention's dropout) (internal header).
#pragma once
#include "ember/ops/random.h"
#include "philox.h"

namespace ember {

// The stream (seed, offset) of one op call from gen (or the default generator), advancing it as
// every random op does (ember/ops/random.h).
PhiloxStream draw_stream(Generator* gen);

}  // namespace ember
