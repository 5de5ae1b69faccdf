// conv_pool.h — (being written)
#pragma once
#include "ember/tensor.h"
