// optim.h — optimizers, learning-rate schedules, gradient clipping and initialisers.
#pragma once
#include "ember/autodiff/init.h"
#include "ember/autodiff/optim/adam.h"
#include "ember/autodiff/optim/clip_grad.h"
#include "ember/autodiff/optim/composed_optimizers.h"
#include "ember/autodiff/optim/composite_lr.h"
#include "ember/autodiff/optim/lr_scheduler.h"
#include "ember/autodiff/optim/one_cycle_lr.h"
#include "ember/autodiff/optim/optimizer.h"
#include "ember/autodiff/optim/plateau.h"
#include "ember/autodiff/optim/rmsprop.h"
#include "ember/autodiff/optim/schedules.h"
#include "ember/autodiff/optim/sgd.h"
