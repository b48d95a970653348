# check_no_criterion_timeout.cmake: no test may ask Criterion for a timeout (`.timeout = ...`):
# Criterion 2.4.1 keeps each one in a 48-byte request that LeakSanitizer has reported as leaked
# (tests/support/time_limit.h says where and when); tests call fl_time_limit instead.
# Usage: cmake -DDIR=<folder> -P check_no_criterion_timeout.cmake  (fails naming each file)
if(NOT DIR)
  message(FATAL_ERROR "check_no_criterion_timeout: DIR not given")
endif()
file(GLOB_RECURSE sources "${DIR}/*.c" "${DIR}/*.h")
set(bad "")
foreach(f ${sources})
  file(STRINGS "${f}" hits REGEX "\\.timeout[ \t]*=")
  if(hits)
    list(APPEND bad "${f}")
  endif()
endforeach()
list(LENGTH sources n)
if(bad)
  list(JOIN bad ", " bad)
  # one unwrapped line (message() would fold it), then the failure
  execute_process(COMMAND ${CMAKE_COMMAND} -E echo
    "${bad}: Criterion's .timeout leaks under LeakSanitizer; call fl_time_limit (tests/support/time_limit.h)")
  message(FATAL_ERROR "check_no_criterion_timeout: failed")
endif()
message(STATUS "no Criterion .timeout in ${n} test sources")
