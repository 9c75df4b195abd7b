/* The reduction loops compiled for the avx512 target (flags in CMakeLists.txt). */
#define KERNEL_TABLE mpiopt_kernels_avx512
#define KERNEL_ISA_NAME "avx512"
#include "kernels_impl.h"
