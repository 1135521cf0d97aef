# The ThreadSanitizer pass of ci/test.sh builds only the target unet_tsan_tests and runs only the
# tests labelled `tsan`: the ones that run threads (the SPSC descriptor ring's and the out-of-band
# socket's unit tests, the two-thread device tests, the examples).

# unet_tsan_target(TARGET): TARGET is built by unet_tsan_tests.
function(unet_tsan_target target)
  if(NOT TARGET unet_tsan_tests)
    add_custom_target(unet_tsan_tests)
  endif()
  add_dependencies(unet_tsan_tests ${target})
endfunction()

# unet_tsan_label(TARGET TIER [REGEX]): gives the tests gtest_discover_tests() finds in TARGET whose
# names match REGEX (default: all) the labels TIER and `tsan`, and makes unet_tsan_tests build
# TARGET. Only tests that run threads are worth ThreadSanitizer's time; in the VM it is slow.
# gtest_discover_tests' PROPERTIES cannot carry a list (its generated script splits "unit;tsan"
# into two arguments), so this appends a script of our own to the directory's TEST_INCLUDE_FILES:
# ctest runs it after the discovered tests are defined, with their names in ${TARGET}_TESTS.
# Call it after gtest_discover_tests(TARGET ...).
function(unet_tsan_label target tier)
  set(regex ".*")
  if(ARGC GREATER 2)
    set(regex "${ARGV2}")
  endif()
  set(script "${CMAKE_CURRENT_BINARY_DIR}/${target}_tsan_label.cmake")
  file(WRITE "${script}"
    "foreach(t IN LISTS ${target}_TESTS)\n"
    "  if(t MATCHES [==[${regex}]==])\n"
    "    set_tests_properties(\"\${t}\" PROPERTIES LABELS \"${tier};tsan\")\n"
    "  endif()\n"
    "endforeach()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${script}")
  unet_tsan_target(${target})
endfunction()
