# Runs cxds-load against cxds demo (DRIVE=teaching) or cxds serve (DRIVE=files, with a
# restart) and checks its exit code and JSON report (see test/load/CMakeLists.txt for the
# variables).
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
set(_json "${WORK}/report.json")

if(DRIVE STREQUAL "files")
  # A copy of the example mesh: the drive adds its own file to it and rewrites it.
  file(COPY "${MESH_DIR}/" DESTINATION "${WORK}/config")
  set(_drive --drive files --cxds-binary "${CXDS}" --config-dir "${WORK}/config" --admin-address "${ADMIN_ADDRESS}"
             --protocol delta --restart --restart-settle 1s)
else()
  set(_drive --drive teaching --teaching-binary "${CXDS}" --inventory-port "${INVENTORY_PORT}")
  if(KEEP_UNCHANGED)
    list(APPEND _drive --server-arg=--keep-unchanged-types)
  endif()
endif()
execute_process(
  COMMAND "${LOAD}" ${_drive}
          --xds-address "${XDS_ADDRESS}"
          --streams "${STREAMS}" --changes "${CHANGES}" --change-interval 0.2s
          --duration 120s --server-log "${WORK}/cxds.log" --server-log-level info
          --json "${_json}"
  RESULT_VARIABLE _rc
  OUTPUT_VARIABLE _out
  ERROR_VARIABLE _err
  TIMEOUT 170)
message("${_out}")
if(NOT _rc EQUAL 0)
  message("${_err}")
  message(FATAL_ERROR "cxds-load exited with ${_rc}; server log: ${WORK}/cxds.log")
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
if(KEEP_UNCHANGED)
  # Each change moves the endpoint only: SotW proxies got CDS, LDS and RDS once, at start.
  foreach(_type CDS LDS RDS)
    string(JSON _responses GET "${_report}" types ${_type} responses)
    if(NOT _responses EQUAL ${STREAMS})
      message(FATAL_ERROR "${_type}: ${_responses} responses for ${STREAMS} streams, expected one each (unchanged type)")
    endif()
  endforeach()
endif()
# The server's own account of each change: every stream was written to.
string(JSON _reports LENGTH "${_report}" server_reports)
set(_reached 0)
if(_reports GREATER 0)
  math(EXPR _last_report "${_reports} - 1")
  foreach(_i RANGE ${_last_report})
    string(JSON _proxies GET "${_report}" server_reports ${_i} proxies)
    string(JSON _written GET "${_report}" server_reports ${_i} proxies_written)
    if(_proxies EQUAL ${STREAMS} AND _written EQUAL ${STREAMS})
      math(EXPR _reached "${_reached} + 1")
    endif()
  endforeach()
endif()
if(NOT _reached EQUAL ${CHANGES})
  message(FATAL_ERROR "the server reports ${_reached} changes written to all ${STREAMS} streams, expected ${CHANGES}")
endif()
if(DRIVE STREQUAL "files")
  # Restarted on the same configuration, cxds sends the reconnecting Delta proxies nothing new.
  string(JSON _reconnected GET "${_report}" reconnect reconnected)
  string(JSON _resource_bytes GET "${_report}" reconnect resource_bytes)
  if(NOT _reconnected EQUAL ${STREAMS} OR NOT _resource_bytes EQUAL 0)
    message(FATAL_ERROR "after the restart ${_reconnected} of ${STREAMS} reconnected and ${_resource_bytes} resource bytes were sent")
  endif()
  # Each new resource version was serialized once, whatever the number of streams.
  string(JSON _serializations GET "${_report}" serializations server_serializations)
  string(JSON _versions GET "${_report}" serializations resource_versions)
  if(NOT _versions EQUAL ${CHANGES} OR NOT _serializations EQUAL _versions)
    message(FATAL_ERROR "${_serializations} serializations for ${_versions} resource versions (${CHANGES} changes)")
  endif()
endif()
message(STATUS "all ${STREAMS} streams converged on all ${CHANGES} changes")
