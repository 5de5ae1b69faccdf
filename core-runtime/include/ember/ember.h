// ember.h — everything core-runtime offers, in one include.
#pragma once
#include "ember/allocator.h"
#include "ember/backend.h"
#include "ember/cpu.h"
#include "ember/cuda.h"
#include "ember/device.h"
#include "ember/dtype.h"
#include "ember/error.h"
#include "ember/from_blob.h"
#include "ember/ops.h"  // every header of ember/ops/ (generated)
#include "ember/shape.h"
#include "ember/tensor.h"
#include "ember/threads.h"
#include "ember/version.h"
