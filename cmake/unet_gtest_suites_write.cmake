# Run after each build of a target given to unet_gtest_suites() (cmake -P, with -Dexe -Dout
# -Dtarget -Dprefix -Dlabels -Dtimeout -Dalone -Dworkdir): lists its cases and writes the ctest
# script that adds one test per suite, and one per case that matches `alone`.
execute_process(COMMAND "${exe}" --gtest_list_tests
  OUTPUT_VARIABLE listing ERROR_VARIABLE errors RESULT_VARIABLE rc TIMEOUT 60)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "unet_gtest_suites: ${exe} --gtest_list_tests failed (${rc}):\n${errors}")
endif()

# Suites are the lines "Suite.  # optional comment"; their cases follow, indented by two spaces.
string(REPLACE ";" "," listing "${listing}")  # a parameter's printed value may hold one
string(REPLACE "\n" ";" lines "${listing}")
set(suites)
foreach(line IN LISTS lines)
  if(line MATCHES "^([^ #][^ ]*)\\.( .*)?$")
    set(suite "${CMAKE_MATCH_1}")
    list(APPEND suites "${suite}")
    set("cases_${suite}")
  elseif(line MATCHES "^  ([^ ]+)" AND DEFINED suite)
    list(APPEND "cases_${suite}" "${CMAKE_MATCH_1}")
  endif()
endforeach()

set(script "")
set(names)
# add(NAME FILTER CASES): one test, its properties, its name in ${target}_TESTS.
macro(add name filter cases)
  math(EXPR t "${timeout} * ${cases}")
  string(APPEND script
    "add_test([==[${name}]==] [==[${exe}]==] [==[--gtest_filter=${filter}]==])\n"
    "set_tests_properties([==[${name}]==] PROPERTIES LABELS [==[${labels}]==] TIMEOUT ${t}"
    " WORKING_DIRECTORY [==[${workdir}]==] SKIP_REGULAR_EXPRESSION [==[\\[  SKIPPED \\]]==])\n")
  list(APPEND names "${name}")
endmacro()

foreach(suite IN LISTS suites)
  if(suite MATCHES "^DISABLED_")
    continue()
  endif()
  set(kept 0)
  set(apart)
  foreach(case IN LISTS "cases_${suite}")
    if(case MATCHES "^DISABLED_")
      continue()
    endif()
    if(NOT "${alone}" STREQUAL "" AND "${suite}.${case}" MATCHES "${alone}")
      add("${prefix}${suite}.${case}" "${suite}.${case}" 1)
      list(APPEND apart "${suite}.${case}")
    else()
      math(EXPR kept "${kept} + 1")
    endif()
  endforeach()
  if(kept GREATER 0)
    set(filter "${suite}.*")
    if(apart)
      list(JOIN apart ":" negative)
      string(APPEND filter "-${negative}")
    endif()
    add("${prefix}${suite}" "${filter}" ${kept})
  endif()
endforeach()
if(NOT names)
  message(FATAL_ERROR "unet_gtest_suites: ${exe} lists no test")
endif()
list(JOIN names "]==] [==[" quoted)
string(APPEND script "set(${target}_TESTS [==[${quoted}]==])\n")
file(WRITE "${out}" "${script}")
