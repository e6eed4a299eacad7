// A deliberate violation for the layer-check test: kernels include nothing else of the engine.
#include "engine/tensor.h"
