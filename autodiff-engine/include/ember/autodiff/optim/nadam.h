// nadam.h — NAdam, declared with the other optimizers composed of elementwise ops in
// composed_optimizers.h (this header stays for the code that includes it).
#pragma once
#include "ember/autodiff/optim/composed_optimizers.h"
