# Prints the tkc targets that tkc_add_kernels would pick for the CUDA
# architectures in ARCHITECTURES, one line per target.
include(${CMAKE_CURRENT_LIST_DIR}/../../../cmake/tkcAddKernels.cmake)
tkc_targets_for_architectures(chosen "${ARCHITECTURES}")
foreach(target IN LISTS chosen_TARGETS)
  message(STATUS "${target}: ${chosen_${target}}")
endforeach()
