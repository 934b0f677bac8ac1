# ruccl_find_optional(<part> <option var> <result var>)
# Detects an optional part. AUTO uses it when found, ON fails the configure when
# it is missing, OFF skips it. The parts' own build rules live with their code
# (src/bootstrap, src/transport, src/device/cuda); this only decides "is it here".
function(ruccl_find_optional part option result)
  set(mode "${${option}}")
  string(TOUPPER "${mode}" mode)
  set(found FALSE)
  if(NOT mode STREQUAL "OFF")
    if(part STREQUAL "MPI")
      find_package(MPI COMPONENTS C CXX QUIET)
      set(found ${MPI_FOUND})
    elseif(part STREQUAL "UCX")
      find_package(PkgConfig QUIET)
      if(PkgConfig_FOUND)
        pkg_check_modules(UCX QUIET IMPORTED_TARGET ucx)
        # The transport's MACs (src/transport/wire_header.cpp) need libsodium.
        pkg_check_modules(SODIUM QUIET IMPORTED_TARGET libsodium)
        if(UCX_FOUND AND NOT SODIUM_FOUND)
          message(STATUS "ruccl: UCX found but libsodium (pkg-config libsodium) is not: "
                         "no UCX transport (install libsodium-dev)")
        endif()
        if(UCX_FOUND AND SODIUM_FOUND)
          set(found TRUE)
        endif()
      endif()
    elseif(part STREQUAL "CUDA")
      # Detected (and the language enabled) by ruccl_enable_cuda below.
      set(found ${RUCCL_CUDA_LANGUAGE})
    endif()
  endif()
  if(mode STREQUAL "ON" AND NOT found)
    message(FATAL_ERROR "${option}=ON but ${part} was not found")
  endif()
  set(${result} ${found} PARENT_SCOPE)
endfunction()

# CUDA is a language, not a package: enable_language(CUDA) must run in the
# top-level directory's file scope (every directory links the backend), so
# this macro runs when the top level includes this file. It enables CUDA when
# RUCCL_WITH_CUDA is not OFF and nvcc works; AUTO also stays off under
# RUCCL_SANITIZE (nvcc takes no -fsanitize). The architectures default to
# sm_90 code plus compute_90 PTX (newer GPUs JIT it); -DCMAKE_CUDA_ARCHITECTURES
# overrides. Sets RUCCL_CUDA_LANGUAGE and, when on, the CUDA:: toolkit targets.
macro(ruccl_enable_cuda)
  set(RUCCL_CUDA_LANGUAGE FALSE)
  string(TOUPPER "${RUCCL_WITH_CUDA}" _ruccl_cuda_mode)
  if(_ruccl_cuda_mode STREQUAL "AUTO" AND RUCCL_SANITIZE)
    message(STATUS "ruccl: CUDA backend off under RUCCL_SANITIZE (set RUCCL_WITH_CUDA=ON to force)")
  elseif(NOT _ruccl_cuda_mode STREQUAL "OFF")
    include(CheckLanguage)
    if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
      set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc CACHE FILEPATH "nvcc")
    endif()
    check_language(CUDA)
    if(CMAKE_CUDA_COMPILER)
      if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
        set(CMAKE_CUDA_ARCHITECTURES "90-real;90-virtual" CACHE STRING "CUDA architectures (sm_90 + PTX)")
      endif()
      # One CUDA runtime, the shared one, for every target (not the static
      # one CMake adds to whatever links CUDA objects by default).
      if(NOT DEFINED CMAKE_CUDA_RUNTIME_LIBRARY)
        set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
      endif()
      enable_language(CUDA)
      # CMake 3.25 knows no C++20 dialect flag for nvcc. The libraries that
      # take the CUDA objects ask for cxx_std_20, which the Makefile generator
      # then requires of CUDA too (Ninja does not check). No CUDA source is
      # compiled at 20 (ruccl_cuda sets CUDA_STANDARD 17); the flag only lets
      # generation succeed.
      if(CMAKE_CUDA_COMPILER_ID STREQUAL "NVIDIA" AND NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
        set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
        set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
      endif()
      find_package(CUDAToolkit REQUIRED)
      set(RUCCL_CUDA_LANGUAGE TRUE)
    endif()
  endif()
endmacro()
ruccl_enable_cuda()
