// The host loops built for the generic instruction set (its flags: src/CMakeLists.txt).
#define RUCCL_HOST_ISA_NS generic
#include "device/host/host_kernels_loops.inc"
