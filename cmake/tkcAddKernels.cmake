# tkc_add_kernels(): compiles .tk files with tkc at build time and adds the
# generated CUDA to a library. docs/cmake.md describes the options.

include_guard(GLOBAL)
# The functions keep the policies they are defined under, whatever the
# project that includes this file asks for.
cmake_policy(PUSH)
cmake_policy(VERSION 3.20...3.31)

# The tkc target whose code runs on each CUDA architecture. The sm_80
# target's code (cp.async, mma.sync) runs on every Ampere and Ada GPU;
# sm_90a's wgmma and tensor-memory copies need exactly 90a.
set(_TKC_TARGET_OF_ARCHITECTURE_80 sm_80)
set(_TKC_TARGET_OF_ARCHITECTURE_86 sm_80)
set(_TKC_TARGET_OF_ARCHITECTURE_87 sm_80)
set(_TKC_TARGET_OF_ARCHITECTURE_89 sm_80)
set(_TKC_TARGET_OF_ARCHITECTURE_90a sm_90a)
set(_TKC_ARCHITECTURE_OF_TARGET_sm_80 80)
set(_TKC_ARCHITECTURE_OF_TARGET_sm_90a 90a)

# Groups CUDA architectures (CMAKE_CUDA_ARCHITECTURES entries such as 86 or
# 90a-real) by the tkc target that serves them. Sets `<prefix>_TARGETS` to
# the targets in order of first appearance and `<prefix>_<target>` to the
# entries each one is compiled for. An entry no target serves is a warning:
# the library will have no kernels for that GPU.
function(tkc_targets_for_architectures prefix architectures)
  set(targets "")
  set(unserved "")
  if(NOT architectures)
    set(architectures OFF)
  endif()
  foreach(entry IN LISTS architectures)
    if(entry MATCHES "^(native|all|all-major)$" OR NOT entry)
      message(FATAL_ERROR
        "tkc_add_kernels: CMAKE_CUDA_ARCHITECTURES is '${architectures}', which does not say which tkc "
        "target to compile for. Pass TARGETS sm_80 or TARGETS sm_90a, or list the architectures "
        "(for example 80 or 90a).")
    endif()
    string(REGEX REPLACE "-(real|virtual)$" "" architecture "${entry}")
    set(target "${_TKC_TARGET_OF_ARCHITECTURE_${architecture}}")
    if(NOT target)
      list(APPEND unserved "${entry}")
      continue()
    endif()
    list(APPEND targets ${target})
    list(APPEND ${prefix}_${target} "${entry}")
  endforeach()
  list(REMOVE_DUPLICATES targets)
  if(unserved)
    set(hint "")
    if("90" IN_LIST unserved OR "90-real" IN_LIST unserved)
      set(hint " Hopper GPUs need 90a, not 90.")
    endif()
    set(summary "tkc targets: sm_80 for architectures 80, 86, 87 and 89; sm_90a for 90a.")
    if(NOT targets)
      message(FATAL_ERROR
        "tkc_add_kernels: no tkc target for CUDA architectures '${architectures}'. ${summary}${hint}")
    endif()
    string(JOIN ", " unserved ${unserved})
    message(WARNING
      "tkc_add_kernels: no tkc target for CUDA architecture(s) ${unserved}, so the kernels will not run on "
      "those GPUs. ${summary}${hint}")
  endif()
  set(${prefix}_TARGETS "${targets}" PARENT_SCOPE)
  foreach(target IN LISTS targets)
    set(${prefix}_${target} "${${prefix}_${target}}" PARENT_SCOPE)
  endforeach()
endfunction()

# Where the CUDA generated from `source` for `target` goes: the source's
# path under the current source dir, so equal file names in different
# folders stay apart.
function(_tkc_generated_path out library target source)
  cmake_path(RELATIVE_PATH source BASE_DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}" OUTPUT_VARIABLE relative)
  if(relative MATCHES "^\\.\\./" OR IS_ABSOLUTE "${relative}")
    cmake_path(GET source FILENAME relative)
  endif()
  string(REGEX REPLACE "\\.tk$" "" relative "${relative}")
  set(${out} "${CMAKE_CURRENT_BINARY_DIR}/tkc/${library}/${target}/${relative}.cu" PARENT_SCOPE)
endfunction()

function(tkc_add_kernels)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "TARGET" "SOURCES;TARGETS;OPTIONS")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "tkc_add_kernels: unknown arguments: ${arg_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT arg_TARGET)
    message(FATAL_ERROR "tkc_add_kernels: TARGET names no library")
  endif()
  if(NOT arg_SOURCES)
    message(FATAL_ERROR "tkc_add_kernels(TARGET ${arg_TARGET}): SOURCES names no .tk file")
  endif()
  if(NOT CMAKE_CUDA_COMPILER_LOADED)
    message(FATAL_ERROR
      "tkc_add_kernels(TARGET ${arg_TARGET}): the CUDA language is not enabled. Add CUDA to the languages "
      "of project() or call enable_language(CUDA) first.")
  endif()

  set(library ${arg_TARGET})
  if(arg_TARGETS)
    set(chosen_TARGETS "")
    foreach(target IN LISTS arg_TARGETS)
      set(architecture "${_TKC_ARCHITECTURE_OF_TARGET_${target}}")
      if(NOT architecture)
        message(FATAL_ERROR "tkc_add_kernels(TARGET ${library}): unknown tkc target '${target}' (known: sm_80, sm_90a)")
      endif()
      list(APPEND chosen_TARGETS ${target})
      set(chosen_${target} ${architecture})
    endforeach()
    list(REMOVE_DUPLICATES chosen_TARGETS)
  else()
    tkc_targets_for_architectures(chosen "${CMAKE_CUDA_ARCHITECTURES}")
  endif()

  # Each target's generated file defines the launch functions under the
  # same names (tkc_NAME, tkc_NAME_error) and the same kernel symbols, so
  # two targets in one program would clash at link time. Earlier calls for
  # the same library count too.
  get_property(earlier GLOBAL PROPERTY _TKC_TARGETS_OF_${library})
  set(all_targets ${earlier} ${chosen_TARGETS})
  list(REMOVE_DUPLICATES all_targets)
  list(LENGTH all_targets target_count)
  if(target_count GREATER 1)
    string(JOIN " and " both ${all_targets})
    message(FATAL_ERROR
      "tkc_add_kernels(TARGET ${library}): asked for the targets ${both}, but a library holds the kernels of "
      "one tkc target: the code of each defines the same launch functions (tkc_NAME) and kernel symbols, "
      "which would clash at link time. Pass one target in TARGETS (or one architecture family in "
      "CMAKE_CUDA_ARCHITECTURES).")
  endif()

  set_property(GLOBAL PROPERTY _TKC_TARGETS_OF_${library} ${all_targets})
  if(NOT TARGET ${library})
    add_library(${library} STATIC)
  endif()
  # Linking as CUDA brings in the CUDA runtime (CMAKE_CUDA_RUNTIME_LIBRARY),
  # which objects alone, without CUDA sources, would not.
  get_target_property(linker_language ${library} LINKER_LANGUAGE)
  if(NOT linker_language)
    set_target_properties(${library} PROPERTIES LINKER_LANGUAGE CUDA)
  endif()
  target_link_libraries(${library} PUBLIC tkc::runtime)

  foreach(target IN LISTS chosen_TARGETS)
    set(generated "")
    foreach(source IN LISTS arg_SOURCES)
      cmake_path(ABSOLUTE_PATH source BASE_DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}" NORMALIZE)
      _tkc_generated_path(output ${library} ${target} "${source}")
      if(output IN_LIST generated)
        message(FATAL_ERROR
          "tkc_add_kernels(TARGET ${library}): two sources would both generate ${output}: give them different "
          "file names, or keep them under the current source dir")
      endif()
      cmake_path(GET source FILENAME name)
      add_custom_command(
        OUTPUT "${output}"
        COMMAND tkc::tkc "--target=${target}" ${arg_OPTIONS} -o "${output}" "${source}"
        DEPENDS "${source}" tkc::tkc
        COMMENT "tkc: compiling ${name} for ${target}"
        VERBATIM)
      list(APPEND generated "${output}")
    endforeach()
    # CUDA_ARCHITECTURES is a property of targets, not of sources: each tkc
    # target's files compile in an object library of their own.
    # A later call for the same library and target adds to the same one.
    set(objects ${library}_tkc_${target})
    if(TARGET ${objects})
      target_sources(${objects} PRIVATE ${generated})
      set_property(TARGET ${objects} APPEND PROPERTY CUDA_ARCHITECTURES ${chosen_${target}})
      get_target_property(architectures ${objects} CUDA_ARCHITECTURES)
      list(REMOVE_DUPLICATES architectures)
      set_target_properties(${objects} PROPERTIES CUDA_ARCHITECTURES "${architectures}")
      continue()
    endif()
    add_library(${objects} OBJECT ${generated})
    set_target_properties(${objects} PROPERTIES
      CUDA_ARCHITECTURES "${chosen_${target}}"
      POSITION_INDEPENDENT_CODE ON)
    target_link_libraries(${objects} PRIVATE tkc::runtime)
    target_sources(${library} PRIVATE $<TARGET_OBJECTS:${objects}>)
  endforeach()
endfunction()

cmake_policy(POP)
