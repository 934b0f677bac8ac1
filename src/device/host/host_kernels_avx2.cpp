// The host loops built for the avx2 instruction set (its flags: src/CMakeLists.txt).
#define RUCCL_HOST_ISA_NS avx2
#include "device/host/host_kernels_loops.inc"
