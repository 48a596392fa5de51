# Runs cxds-load against cxds demo and checks its exit code and JSON report (see
# test/load/CMakeLists.txt for the variables).
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
set(_json "${WORK}/report.json")

execute_process(
  COMMAND "${LOAD}" --drive teaching --teaching-binary "${CXDS}"
          --xds-address "${XDS_ADDRESS}" --inventory-port "${INVENTORY_PORT}"
          --streams "${STREAMS}" --changes "${CHANGES}" --change-interval 0.2s
          --duration 120s --server-log "${WORK}/cxds-demo.log" --server-log-level info
          --json "${_json}"
  RESULT_VARIABLE _rc
  OUTPUT_VARIABLE _out
  ERROR_VARIABLE _err
  TIMEOUT 170)
message("${_out}")
if(NOT _rc EQUAL 0)
  message("${_err}")
  message(FATAL_ERROR "cxds-load exited with ${_rc}; server log: ${WORK}/cxds-demo.log")
endif()
if(NOT EXISTS "${_json}")
  message(FATAL_ERROR "cxds-load wrote no JSON report")
endif()

file(READ "${_json}" _report)
function(expect_equal member expected)
  string(JSON _value GET "${_report}" ${member})
  if(NOT "${_value}" STREQUAL "${expected}")
    message(FATAL_ERROR "${member} is ${_value}, expected ${expected}")
  endif()
endfunction()

expect_equal(ok ON)
expect_equal(streams_complete ${STREAMS})
expect_equal(streams_failed 0)
expect_equal(nacks 0)
expect_equal(errors 0)
string(JSON _changes LENGTH "${_report}" changes)
if(NOT _changes EQUAL ${CHANGES})
  message(FATAL_ERROR "${_changes} changes reported, expected ${CHANGES}")
endif()
math(EXPR _last "${CHANGES} - 1")
foreach(_i RANGE ${_last})
  string(JSON _converged GET "${_report}" changes ${_i} converged)
  if(NOT _converged EQUAL ${STREAMS})
    message(FATAL_ERROR "change ${_i}: ${_converged} of ${STREAMS} streams converged")
  endif()
endforeach()
# Each proxy received every type, and the changes reached them as EDS responses.
foreach(_type CDS EDS LDS RDS)
  string(JSON _responses GET "${_report}" types ${_type} responses)
  if(_responses LESS ${STREAMS})
    message(FATAL_ERROR "${_type}: ${_responses} responses for ${STREAMS} streams")
  endif()
endforeach()
message(STATUS "all ${STREAMS} streams converged on all ${CHANGES} changes")
