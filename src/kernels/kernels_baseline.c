/* The reduction loops compiled for the baseline target (flags in CMakeLists.txt). */
#define KERNEL_TABLE mpiopt_kernels_baseline
#define KERNEL_ISA_NAME "baseline"
#include "kernels_impl.h"
