# collective_training: two ranks train a small network with data-parallel SGD
# (momentum), gradients all-reduced with Mean; `run DIR` saves every rank's
# state after the first update, `resume DIR` continues from it and must print
# the same parameters checksum bit for bit. See collective_training.cpp.
# Included from examples/CMakeLists.txt (include(collective_training.cmake)).
add_executable(collective_training ${CMAKE_CURRENT_LIST_DIR}/collective_training.cpp)
target_link_libraries(collective_training PRIVATE ruccl::ruccl)
target_compile_options(collective_training PRIVATE -Wall -Wextra -Wpedantic)
# --world (under mpirun/srun) needs the world communicator.
if(TARGET ruccl::multinode)
  target_link_libraries(collective_training PRIVATE ruccl::multinode)
  target_compile_definitions(collective_training PRIVATE RUCCL_TRAINING_WITH_WORLD=1)
else()
  target_compile_definitions(collective_training PRIVATE RUCCL_TRAINING_WITH_WORLD=0)
endif()

if(RUCCL_BUILD_TESTS)
  # tests/training/training_test.sh: run, resume and compare the checksums; a
  # corrupt, a truncated and a missing state file, and an existing DIR, each a
  # clear error; --mismatch gives ShapeMismatch on every rank.
  set(_ruccl_training_test ${PROJECT_SOURCE_DIR}/tests/training/training_test.sh)
  add_test(NAME collective_training_inproc
           COMMAND bash ${_ruccl_training_test} inproc $<TARGET_FILE:collective_training>)
  # The binary links UCX (for --world); UCX's memory hooks can crash
  # ThreadSanitizer when a thread exits, and the in-process run needs none.
  set_tests_properties(collective_training_inproc PROPERTIES LABELS inproc TIMEOUT 120
                       ENVIRONMENT "UCX_MEM_EVENTS=no")
  # The same across two processes (mpirun -np 2 --world); it also checks that the
  # checksum equals the in-process one (the same 2-rank Mean, bit for bit).
  if(TARGET ruccl::multinode AND MPIEXEC_EXECUTABLE)
    add_test(NAME collective_training_mpi
             COMMAND bash ${_ruccl_training_test} mpi $<TARGET_FILE:collective_training>)
    set_tests_properties(collective_training_mpi PROPERTIES LABELS mpi TIMEOUT 180
                         ENVIRONMENT "MPIEXEC=${MPIEXEC_EXECUTABLE}")
  endif()
  unset(_ruccl_training_test)
endif()
