# cmake -P script behind the ruccl_install_consumer test (see CMakeLists.txt).
# Every step must succeed; the last line says "install consumer: PASSED".
foreach(var RUCCL_BUILD_DIR WORK_DIR CONSUMER_SOURCE_DIR GENERATOR C_COMPILER CXX_COMPILER)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run_consumer.cmake: -D${var}=... is required")
  endif()
endforeach()

function(step name)
  string(TIMESTAMP begin "%s")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(TIMESTAMP end "%s")
  math(EXPR seconds "${end} - ${begin}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${name} failed (${rc}):\n${ARGN}\n${out}\n${err}")
  endif()
  message(STATUS "${name}: ok (${seconds} s) ${out}")
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

set(prefix ${WORK_DIR}/prefix)
file(REMOVE_RECURSE ${WORK_DIR})

# 1. Install.
step("install" ${CMAKE_COMMAND} --install ${RUCCL_BUILD_DIR} --prefix ${prefix})
foreach(file include/ruccl/ruccl.h include/ruccl/ruccl.hpp)
  if(NOT EXISTS ${prefix}/${file})
    message(FATAL_ERROR "install: ${file} is missing")
  endif()
endforeach()
file(GLOB_RECURSE shared_libs ${prefix}/*/libruccl.so)
file(GLOB_RECURSE static_libs ${prefix}/*/libruccl.a)
file(GLOB_RECURSE configs ${prefix}/*/rucclConfig.cmake)
file(GLOB_RECURSE pcs ${prefix}/*/ruccl.pc)
foreach(kind shared_libs static_libs configs pcs)
  if(NOT ${kind})
    message(FATAL_ERROR "install: no ${kind} under ${prefix}")
  endif()
endforeach()

# 2. CMake: find_package(ruccl CONFIG REQUIRED COMPONENTS static).
step("consumer configure" ${CMAKE_COMMAND} -S ${CONSUMER_SOURCE_DIR} -B ${WORK_DIR}/cmake-build
     -G ${GENERATOR} -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=${prefix}
     -DCMAKE_C_COMPILER=${C_COMPILER} -DCMAKE_CXX_COMPILER=${CXX_COMPILER})
step("consumer build" ${CMAKE_COMMAND} --build ${WORK_DIR}/cmake-build)
foreach(program consumer_cxx consumer_c consumer_cxx_static)
  step("run ${program} (CMake)" ${WORK_DIR}/cmake-build/${program})
endforeach()

# 3. pkg-config, with plain compiler lines.
if(NOT PKG_CONFIG)
  message(FATAL_ERROR "pkg-config not found")
endif()
get_filename_component(pc_dir ${pcs} DIRECTORY)
set(ENV{PKG_CONFIG_PATH} ${pc_dir})
step("pkg-config" ${PKG_CONFIG} --cflags --libs ruccl)
string(STRIP "${step_output}" flags)
separate_arguments(flags UNIX_COMMAND "${flags}")
step("pkg-config libdir" ${PKG_CONFIG} --variable=libdir ruccl)
string(STRIP "${step_output}" libdir)
step("pkg-config --static" ${PKG_CONFIG} --static --libs ruccl)
if(HAVE_UCX AND NOT step_output MATCHES "-lucp")
  message(FATAL_ERROR "pkg-config --static --libs ruccl lacks UCX: ${step_output}")
endif()
file(MAKE_DIRECTORY ${WORK_DIR}/pc-build)
step("cc consumer.c" ${C_COMPILER} -std=c99 -Wall -Wextra -pedantic ${CONSUMER_SOURCE_DIR}/consumer.c
     ${flags} -pthread -Wl,-rpath,${libdir} -o ${WORK_DIR}/pc-build/consumer_c)
step("c++ consumer.cpp" ${CXX_COMPILER} -std=c++20 -Wall -Wextra ${CONSUMER_SOURCE_DIR}/consumer.cpp
     ${flags} -pthread -Wl,-rpath,${libdir} -o ${WORK_DIR}/pc-build/consumer_cxx)
foreach(program consumer_c consumer_cxx)
  step("run ${program} (pkg-config)" ${WORK_DIR}/pc-build/${program})
endforeach()

message("install consumer: PASSED")
