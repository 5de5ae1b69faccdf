// ops.h — every builder function, for graphs (Val) and eager code (Variable): one include.
// Each family's header lists its ops with their shapes; src/rules/<family>.cpp has their OpDefs.
#pragma once
#include "ember/autodiff/ops/attention.h"
#include "ember/autodiff/ops/conv_pool.h"
#include "ember/autodiff/ops/creation.h"
#include "ember/autodiff/ops/elementwise.h"
#include "ember/autodiff/ops/matmul.h"
#include "ember/autodiff/ops/movement.h"
#include "ember/autodiff/ops/normalization.h"
#include "ember/autodiff/ops/rearrange.h"
#include "ember/autodiff/ops/reduction.h"
#include "ember/autodiff/ops/softmax_loss.h"
