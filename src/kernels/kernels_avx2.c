/* The reduction loops compiled for the avx2 target (flags in CMakeLists.txt). */
#define KERNEL_TABLE mpiopt_kernels_avx2
#define KERNEL_ISA_NAME "avx2"
#include "kernels_impl.h"
