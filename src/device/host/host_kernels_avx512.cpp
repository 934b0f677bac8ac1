// The host loops built for the avx512 instruction set (its flags: src/CMakeLists.txt).
#define RUCCL_HOST_ISA_NS avx512
#include "device/host/host_kernels_loops.inc"
