# Calls tkc_add_kernels with ARGS in script mode, where it can only get as
# far as its checks: enough to see which calls it refuses, and why.
include(${CMAKE_CURRENT_LIST_DIR}/../../../cmake/tkcAddKernels.cmake)
set(CMAKE_CUDA_COMPILER_LOADED ${CUDA})
set(CMAKE_CUDA_ARCHITECTURES ${ARCHITECTURES})
separate_arguments(args UNIX_COMMAND "${ARGS}")
tkc_add_kernels(${args})
