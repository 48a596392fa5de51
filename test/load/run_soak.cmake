# Runs cxds-load against cxds serve on a copy of examples/mesh, in one of two modes, and checks
# its exit code and JSON report (see test/load/CMakeLists.txt for the variables):
#   MODE=soak    --soak SOAK with STREAMS proxies (SotW and Delta mixed), a change every 100 ms
#                and CHURN disconnects per stream per second: no lost update, no starved
#                stream, the churn happened, RSS flat after warm-up. Twice the full soak's
#                change rate (cxds's config settle cut to 20 ms to keep up), so that the
#                convergence tracker reaches its cap (256 changes) by about 26 s and the
#                30 s after the warm-up show whether RSS is flat.
#   MODE=memory  STREAMS proxies, CHANGES changes each converged on every proxy, the server's
#                RSS read every 500 changes: RSS after CHANGES within 10% of RSS after 500.
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
file(COPY "${MESH_DIR}/" DESTINATION "${WORK}/config")
set(_json "${WORK}/report.json")
set(_common --drive files --cxds-binary "${CXDS}" --config-dir "${WORK}/config" --xds-address "${XDS_ADDRESS}"
            --admin-address "${ADMIN_ADDRESS}" --streams "${STREAMS}" --server-log "${WORK}/cxds.log"
            --json "${_json}" --quiet)
if(MODE STREQUAL "soak")
  execute_process(
    COMMAND "${LOAD}" ${_common} --soak "${SOAK}" --protocol mixed --churn "${CHURN}" --seed 11
            --change-interval 100ms --server-arg=--config-settle=20ms --warmup 30s
            --rss-interval 2s --rss-csv "${WORK}/rss.csv"
    RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err TIMEOUT 400)
else()
  execute_process(
    COMMAND "${LOAD}" ${_common} --changes "${CHANGES}" --change-interval 0 --rss-every-changes 500
            --duration 900s --server-arg=--config-settle=5ms
    RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err TIMEOUT 950)
endif()
if(MODE STREQUAL "soak")
  message("${_out}")
else()
  # The table lists every change; the RSS lines and the verdict are what matter here.
  string(REGEX MATCHALL "[^\n]*(server rss|RESULT|problem)[^\n]*" _lines "${_out}")
  string(REPLACE ";" "\n" _lines "${_lines}")
  message("${_lines}")
endif()
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
if(MODE STREQUAL "soak")
  expect_equal(lost_updates 0)
  expect_equal(starved_streams 0)
  expect_equal(server_holds_last_change ON)
  expect_equal(open_at_end ${STREAMS})
  expect_equal(nacks 0)
  expect_equal(unexpected_ends 0)
  string(JSON _changes GET "${_report}" changes)
  string(JSON _reconnects GET "${_report}" reconnects)
  string(JSON _sotw GET "${_report}" sotw_connections)
  string(JSON _delta GET "${_report}" delta_connections)
  # The soak did what it says: changes all along, proxies leaving and coming back, both protocols.
  if(_changes LESS 100 OR _reconnects LESS 10 OR _sotw EQUAL 0 OR _delta EQUAL 0)
    message(FATAL_ERROR "a soak of ${_changes} changes, ${_reconnects} reconnects, ${_sotw} SotW and ${_delta} Delta connections proves little")
  endif()
  message(STATUS "soak: ${_changes} changes, ${_reconnects} reconnects, no lost update, no starved stream")
else()
  expect_equal(streams_failed 0)
  expect_equal(nacks 0)
  string(JSON _samples LENGTH "${_report}" server rss_kb_by_change)
  math(EXPR _expected "${CHANGES} / 500")
  if(NOT _samples EQUAL _expected)
    message(FATAL_ERROR "${_samples} RSS samples, expected ${_expected}")
  endif()
  math(EXPR _last "${_samples} - 1")
  string(JSON _first_change GET "${_report}" server rss_kb_by_change 0 change)
  string(JSON _first_kb GET "${_report}" server rss_kb_by_change 0 rss_kb)
  string(JSON _last_change GET "${_report}" server rss_kb_by_change ${_last} change)
  string(JSON _last_kb GET "${_report}" server rss_kb_by_change ${_last} rss_kb)
  if(NOT _first_change EQUAL 500 OR NOT _last_change EQUAL ${CHANGES})
    message(FATAL_ERROR "RSS samples at changes ${_first_change} and ${_last_change}")
  endif()
  # Within 10%: last * 10 <= first * 11.
  math(EXPR _lhs "${_last_kb} * 10")
  math(EXPR _rhs "${_first_kb} * 11")
  if(_lhs GREATER _rhs)
    message(FATAL_ERROR "server RSS after ${_last_change} changes is ${_last_kb} KiB, more than 10% over ${_first_kb} KiB after 500")
  endif()
  message(STATUS "server RSS after 500 changes ${_first_kb} KiB, after ${_last_change} ${_last_kb} KiB")
endif()
