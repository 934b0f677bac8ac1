# Open MPI 4 keeps each mpirun's session files in <base>/ompi.<host>.<uid>/pid.<n>
# (base: /tmp). An mpirun that ends removes ompi.<host>.<uid> when it is empty,
# so one that starts beside it (ctest -j2) can lose the directory between
# creating it and creating its pid.<n> inside, and fails in orte_init ("A call
# to mkdir was unable to create the desired directory"). Every test therefore
# gets a base of its own, short because PMIx puts its sockets below it:
# ${RUCCL_TEST_SESSION_ROOT}/<n>, n counting the tests of this build tree.
string(MD5 _ruccl_tree_hash "${CMAKE_BINARY_DIR}")
string(SUBSTRING "${_ruccl_tree_hash}" 0 8 _ruccl_tree_hash)
set(RUCCL_TEST_SESSION_ROOT "/tmp/ruccl-mpi-${_ruccl_tree_hash}" CACHE PATH
    "Parent of the per-test Open MPI session directories")

function(_ruccl_apply_mpi_session_dirs)
  get_property(tests DIRECTORY PROPERTY TESTS)
  get_property(next GLOBAL PROPERTY RUCCL_TEST_SESSION_NEXT)
  if(NOT next)
    set(next 0)
  endif()
  foreach(test IN LISTS tests)
    set_property(TEST ${test} APPEND PROPERTY ENVIRONMENT
                 "OMPI_MCA_orte_tmpdir_base=${RUCCL_TEST_SESSION_ROOT}/${next}")
    math(EXPR next "${next} + 1")
  endforeach()
  set_property(GLOBAL PROPERTY RUCCL_TEST_SESSION_NEXT ${next})
endfunction()

# Call near the top of a CMakeLists that adds tests: at the end of that
# directory every test it added gets its own session base (after its own
# ENVIRONMENT, which set_tests_properties replaces, is set).
function(ruccl_own_mpi_session_dirs)
  cmake_language(DEFER DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}
                 CALL _ruccl_apply_mpi_session_dirs)
endfunction()
