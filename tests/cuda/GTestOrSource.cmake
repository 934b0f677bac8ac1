# GoogleTest for the whole test tree (included by tests/CMakeLists.txt): the
# installed package when find_package finds it, else the sources in
# third_party/googletest (a git-ignored copy of /usr/src/googletest), built
# here. GPU machines with CUDA, CMake and Python only (tools/gpu-check.sh) take
# the second way; -DRUCCL_GTEST_FROM_SOURCE=ON forces it anywhere.
# Later find_package(GTest REQUIRED) calls (tests/transport, tests/mpi) then
# find a stub GTestConfig.cmake: the GTest:: targets already exist.
option(RUCCL_GTEST_FROM_SOURCE "Build GoogleTest from third_party/googletest" OFF)
set(ruccl_gtest_stub ${CMAKE_BINARY_DIR}/gtest-from-source)
if(GTest_DIR STREQUAL ruccl_gtest_stub)  # the stub of an earlier configure
  unset(GTest_DIR CACHE)
endif()
if(NOT RUCCL_GTEST_FROM_SOURCE)
  find_package(GTest QUIET)
endif()
if(NOT GTest_FOUND OR RUCCL_GTEST_FROM_SOURCE)
  set(ruccl_gtest_source ${PROJECT_SOURCE_DIR}/third_party/googletest)
  if(NOT EXISTS ${ruccl_gtest_source}/CMakeLists.txt)
    message(FATAL_ERROR "GoogleTest not found: install it (Debian: libgtest-dev) or copy its "
                        "sources to third_party/googletest (cp -r /usr/src/googletest third_party/)")
  endif()
  set(BUILD_GMOCK OFF CACHE BOOL "GoogleMock (not used by ruccl)" FORCE)
  set(INSTALL_GTEST OFF CACHE BOOL "Install GoogleTest (no)" FORCE)
  add_subdirectory(${ruccl_gtest_source} ${CMAKE_BINARY_DIR}/third_party/googletest EXCLUDE_FROM_ALL)
  file(WRITE ${ruccl_gtest_stub}/GTestConfig.cmake
       "# GoogleTest is built from ${ruccl_gtest_source} by this build tree.\n")
  set(GTest_DIR ${ruccl_gtest_stub} CACHE PATH "GoogleTest config (stub: built from source)" FORCE)
  message(STATUS "ruccl: GoogleTest built from ${ruccl_gtest_source}")
endif()
