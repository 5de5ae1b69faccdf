// ops.h — every builder function, for graphs (Val) and eager code (Variable): one include.
#pragma once
#include "ember/autodiff/ops/creation.h"
#include "ember/autodiff/ops/elementwise.h"
#include "ember/autodiff/ops/movement.h"
#include "ember/autodiff/ops/reduction.h"
