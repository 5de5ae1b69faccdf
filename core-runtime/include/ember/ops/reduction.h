// reduction.h — (being written)
#pragma once
#include "ember/tensor.h"
