# unet_gtest_suites(TARGET [PREFIX p] [LABELS l] [TIMEOUT s] [ALONE regex]): one ctest test per
# GoogleTest suite of TARGET, where gtest_discover_tests() makes one per case. For the device tier,
# which runs in ci/rxe-vm: there a process start and ctest's bookkeeping cost about 0.5 s a test
# (tests/README.md), more than most of its cases take.
#   PREFIX   put before each test name (as gtest_discover_tests' TEST_PREFIX)
#   LABELS   the tests' label
#   TIMEOUT  seconds per case; a suite's test gets this times its number of cases
#   ALONE    cases whose name ("Suite.Case") matches this regex get a test of their own, named
#            PREFIX Suite.Case (as gtest_discover_tests would), and leave their suite's test
# The cases are listed (--gtest_list_tests) after each build, as gtest_discover_tests does. The
# test names are in ${TARGET}_TESTS for scripts in TEST_INCLUDE_FILES (unet_tsan_label()).
function(unet_gtest_suites target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "PREFIX;LABELS;TIMEOUT;ALONE" "")
  if(NOT arg_TIMEOUT)
    set(arg_TIMEOUT 120)
  endif()
  set(out "${CMAKE_CURRENT_BINARY_DIR}/${target}_suites.cmake")
  add_custom_command(TARGET ${target} POST_BUILD
    COMMAND "${CMAKE_COMMAND}" "-Dexe=$<TARGET_FILE:${target}>" "-Dout=${out}" "-Dtarget=${target}"
      "-Dprefix=${arg_PREFIX}" "-Dlabels=${arg_LABELS}" "-Dtimeout=${arg_TIMEOUT}"
      "-Dalone=${arg_ALONE}" "-Dworkdir=${CMAKE_CURRENT_BINARY_DIR}"
      -P "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/unet_gtest_suites_write.cmake"
    BYPRODUCTS "${out}"
    VERBATIM)
  # Until TARGET is built, one test that says so (as gtest_discover_tests does).
  set(include "${CMAKE_CURRENT_BINARY_DIR}/${target}_suites_include.cmake")
  file(WRITE "${include}"
    "if(EXISTS \"${out}\")\n"
    "  include(\"${out}\")\n"
    "else()\n"
    "  add_test(${target}_NOT_BUILT ${target}_NOT_BUILT)\n"
    "endif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${include}")
endfunction()
