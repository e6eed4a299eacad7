// A deliberate violation for the layer-check test: the server may not reach into the kernels.
#include "engine/kernels/dtype.h"
