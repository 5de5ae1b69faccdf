// generator.h — ember.Generator (bind_creation.cpp) and the generator= argument that the random
// ops take (bind_creation.cpp, bind_operators.cpp, bind_optim.cpp).
#pragma once
#include <ember/ops/random.h>

#include "bindings.h"

namespace ember::python {

// A random stream of its own: core-runtime's Generator (a Philox seed and the count of op calls
// drawn) and the device it was made for.
struct PyGenerator {
  Generator state;
  Device device;
};

// The generator= argument of a random op: None (the default generator: nullptr) or an
// ember.Generator; anything else is a DTypeError naming op.
Generator* generator_from_object(py::handle obj, const char* op);

}  // namespace ember::python
