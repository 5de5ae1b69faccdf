// autodiff.h — everything of autodiff-engine: graphs, ops, gradients, the executor, eager mode.
#pragma once
#include "ember/autodiff/autocast.h"
#include "ember/autodiff/executor.h"
#include "ember/autodiff/grad.h"
#include "ember/autodiff/graph.h"
#include "ember/autodiff/op.h"
#include "ember/autodiff/ops.h"
#include "ember/autodiff/optim.h"
#include "ember/autodiff/variable.h"
#include "ember/autodiff/version.h"
