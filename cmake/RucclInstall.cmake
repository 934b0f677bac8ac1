# Installation and packaging. Included by the top-level CMakeLists.txt after
# src/, when every library target exists.
#
# The build tree keeps its layered static libraries (ruccl, ruccl_bootstrap,
# ruccl_transport, ruccl_multinode, the CUDA object library): tests and
# examples link those. What gets installed is built from the same object files:
#
#   lib/libruccl.so.<version>  one shared library holding every part this build
#                              has (core + C API, CUDA backend, MPI bootstrap,
#                              UCX transport, multinode); imported as ruccl::ruccl
#   lib/libruccl.a             the same objects as one static archive; imported
#                              as ruccl::ruccl_static (COMPONENTS static)
#   lib/libruccl_mpi.so        the PMPI layer (with MPI and multinode); imported
#                              as ruccl::mpi_layer
#   include/ruccl/             the C++ headers and the C header ruccl.h
#                              (world.hpp only with the multinode layer)
#   lib/cmake/ruccl/           rucclConfig.cmake: find_package(ruccl CONFIG)
#   lib/pkgconfig/ruccl.pc     pkg-config --cflags --libs ruccl
#
# The targets ruccl_shared and ruccl_static live in the top-level build
# directory (package/lib), so they never clash with src/libruccl.a.
option(RUCCL_INSTALL "Build libruccl.so / libruccl.a and the install rules" ON)
if(NOT RUCCL_INSTALL)
  return()
endif()

include(GNUInstallDirs)
include(CMakePackageConfigHelpers)
find_package(Threads REQUIRED)  # src/ found it in its own directory scope

# The parts this build has, in dependency order; object libraries linked into
# them (the CUDA backend) join too.
set(ruccl_parts "")
foreach(part ruccl ruccl_bootstrap_base ruccl_bootstrap ruccl_transport ruccl_multinode)
  if(TARGET ${part})
    list(APPEND ruccl_parts ${part})
  endif()
endforeach()

set(ruccl_objects "")
set(ruccl_private_deps "")
foreach(part IN LISTS ruccl_parts)
  list(APPEND ruccl_objects $<TARGET_OBJECTS:${part}>)
  get_target_property(links ${part} LINK_LIBRARIES)
  if(NOT links)
    set(links "")
  endif()
  foreach(item IN LISTS links)
    if(item MATCHES "^::@" OR item IN_LIST ruccl_parts OR item MATCHES "^ruccl::")
      continue()  # directory markers, and the parts themselves
    endif()
    if(TARGET ${item})
      get_target_property(type ${item} TYPE)
      if(type STREQUAL "OBJECT_LIBRARY")
        list(APPEND ruccl_objects $<TARGET_OBJECTS:${item}>)
        get_target_property(object_links ${item} LINK_LIBRARIES)
        if(object_links)
          foreach(dep IN LISTS object_links)
            if(NOT dep MATCHES "^::@")
              list(APPEND ruccl_private_deps ${dep})
            endif()
          endforeach()
        endif()
        continue()
      endif()
    endif()
    list(APPEND ruccl_private_deps ${item})
  endforeach()
endforeach()
list(REMOVE_DUPLICATES ruccl_private_deps)
list(REMOVE_ITEM ruccl_private_deps Threads::Threads)  # public, below

# Usage requirements shared by both installed libraries.
function(ruccl_package_target target)
  target_include_directories(${target} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_compile_features(${target} PUBLIC cxx_std_20)
  target_link_libraries(${target} PUBLIC Threads::Threads)
  set_target_properties(${target} PROPERTIES
    OUTPUT_NAME ruccl
    LINKER_LANGUAGE CXX
    ARCHIVE_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/package/lib
    LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/package/lib)
endfunction()

add_library(ruccl_shared SHARED ${ruccl_objects})
ruccl_package_target(ruccl_shared)
target_link_libraries(ruccl_shared PRIVATE ${ruccl_private_deps})
set_target_properties(ruccl_shared PROPERTIES
  EXPORT_NAME ruccl
  VERSION ${PROJECT_VERSION}
  SOVERSION ${PROJECT_VERSION_MAJOR}
  # MPI/UCX/CUDA outside the system directories stay found after install.
  INSTALL_RPATH_USE_LINK_PATH ON)

# The static archive's own dependencies (MPI, UCX, CUDA runtime) are added by
# rucclConfig.cmake when a consumer asks for COMPONENTS static, so that the
# shared library's consumers never need MPI's or UCX's development files.
add_library(ruccl_static STATIC ${ruccl_objects})
ruccl_package_target(ruccl_static)
set_target_properties(ruccl_static PROPERTIES EXPORT_NAME ruccl_static)

# ---- Install rules -----------------------------------------------------------
set(RUCCL_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/ruccl)

install(TARGETS ruccl_shared EXPORT rucclTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS ruccl_static EXPORT rucclStaticTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
# The PMPI layer (src/mpi_layer): lib/libruccl_mpi.so, imported as
# ruccl::mpi_layer. It holds its own copy of ruccl and exports only MPI_*.
if(TARGET ruccl_mpi)
  install(TARGETS ruccl_mpi EXPORT rucclTargets
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()
install(EXPORT rucclTargets NAMESPACE ruccl:: DESTINATION ${RUCCL_INSTALL_CMAKEDIR})
install(EXPORT rucclStaticTargets NAMESPACE ruccl:: DESTINATION ${RUCCL_INSTALL_CMAKEDIR})

set(ruccl_header_excludes "")
if(NOT TARGET ruccl_multinode)
  list(APPEND ruccl_header_excludes PATTERN world.hpp EXCLUDE)
endif()
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/ruccl
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.hpp" PATTERN "*.h" ${ruccl_header_excludes})

# What the build has, for the package config and ruccl.pc (TRUE/FALSE).
foreach(part MPI UCX CUDA)
  if(RUCCL_HAVE_${part})
    set(RUCCL_PACKAGE_HAS_${part} TRUE)
  else()
    set(RUCCL_PACKAGE_HAS_${part} FALSE)
  endif()
endforeach()
if(TARGET ruccl_multinode)
  set(RUCCL_PACKAGE_HAS_MULTINODE TRUE)
else()
  set(RUCCL_PACKAGE_HAS_MULTINODE FALSE)
endif()

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/rucclConfig.cmake.in
  ${PROJECT_BINARY_DIR}/package/rucclConfig.cmake
  INSTALL_DESTINATION ${RUCCL_INSTALL_CMAKEDIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/package/rucclConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMinorVersion)  # 0.x: minor versions may break the API
install(FILES ${PROJECT_BINARY_DIR}/package/rucclConfig.cmake
              ${PROJECT_BINARY_DIR}/package/rucclConfigVersion.cmake
        DESTINATION ${RUCCL_INSTALL_CMAKEDIR})

# ruccl.pc, relocatable: prefix is found from the file's own directory.
# Libs.private (pkg-config --static): the archive's dependencies.
set(RUCCL_PC_LIBS_PRIVATE "")
if(RUCCL_HAVE_MPI AND TARGET MPI::MPI_C)
  get_target_property(mpi_libs MPI::MPI_C INTERFACE_LINK_LIBRARIES)
  foreach(lib IN LISTS mpi_libs)
    if(lib AND NOT TARGET ${lib})
      string(APPEND RUCCL_PC_LIBS_PRIVATE " ${lib}")
    endif()
  endforeach()
endif()
if(RUCCL_HAVE_CUDA AND TARGET CUDA::cudart)
  string(APPEND RUCCL_PC_LIBS_PRIVATE " -L${CUDAToolkit_LIBRARY_DIR} -lcudart")
endif()
string(APPEND RUCCL_PC_LIBS_PRIVATE " -lstdc++ -lm")
set(RUCCL_PC_REQUIRES_PRIVATE "")
if(RUCCL_HAVE_UCX)
  set(RUCCL_PC_REQUIRES_PRIVATE "ucx libsodium")
endif()
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(RUCCL_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH up "/root/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/root")
  string(REGEX REPLACE "/$" "" up "${up}")
  set(RUCCL_PC_PREFIX "\${pcfiledir}/${up}")
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/ruccl.pc.in ${PROJECT_BINARY_DIR}/package/ruccl.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/package/ruccl.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
