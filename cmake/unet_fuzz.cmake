# unet_add_fuzzer(<name> <fuzzer source> SOURCES <source>... [INCLUDES <dir>...] [LINK <target>...])
#
# A libFuzzer target (UNET_FUZZ=ON, clang only) for one wire format. It compiles the SOURCES under
# test itself rather than linking the layer's library, so that code carries the fuzzer's coverage
# instrumentation; LINK names what else they need (linked as built, uninstrumented). The target
# sees the public headers of verbs/, core/ and the calling layer (../include), and INCLUDES.
# Each target is also a ctest test labelled `fuzz` (ci/test.sh runs that tier): cmake/run_fuzzer.sh
# runs it for UNET_FUZZ_SECONDS (default 20) from its checked-in seeds, corpus/<name>/ next to the
# fuzzer source, and keeps what it finds under <build>/fuzz/<name>/.
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "UNET_FUZZ needs clang (libFuzzer): configure with -DCMAKE_CXX_COMPILER=clang++")
endif()

# Builds every fuzzer and only what they link (ci/test.sh builds this target, not `all`).
add_custom_target(unet_fuzzers)

function(unet_add_fuzzer name fuzzer)
  cmake_parse_arguments(PARSE_ARGV 2 arg "" "" "SOURCES;INCLUDES;LINK")
  if(NOT arg_SOURCES)
    message(FATAL_ERROR "unet_add_fuzzer(${name}): no SOURCES (the code under test)")
  endif()
  add_executable(${name} ${fuzzer} ${arg_SOURCES})
  target_include_directories(${name} PRIVATE
    ${CMAKE_CURRENT_SOURCE_DIR}/../include
    ${arg_INCLUDES}
    $<TARGET_PROPERTY:unet::core,INTERFACE_INCLUDE_DIRECTORIES>
    $<TARGET_PROPERTY:unet::verbs,INTERFACE_INCLUDE_DIRECTORIES>
    $<TARGET_PROPERTY:unet::base,INTERFACE_INCLUDE_DIRECTORIES>)
  target_compile_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_libraries(${name} PRIVATE ${arg_LINK} unet_build_options)
  add_dependencies(unet_fuzzers ${name})
  add_test(NAME fuzz.${name}
    COMMAND ${PROJECT_SOURCE_DIR}/cmake/run_fuzzer.sh $<TARGET_FILE:${name}>
            ${CMAKE_CURRENT_SOURCE_DIR}/corpus/${name} ${CMAKE_BINARY_DIR}/fuzz/${name})
  set_tests_properties(fuzz.${name} PROPERTIES LABELS fuzz)
endfunction()
