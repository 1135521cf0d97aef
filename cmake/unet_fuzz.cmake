# unet_add_fuzzer(<name> <fuzzer source> <codec source>)
#
# A libFuzzer target (UNET_FUZZ=ON, clang only) for one wire-format codec. It compiles the codec's
# source itself rather than linking the layer's library, so the code under test carries the
# fuzzer's coverage instrumentation; it sees the public headers of verbs/, core/ and the calling
# layer.
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "UNET_FUZZ needs clang (libFuzzer): configure with -DCMAKE_CXX_COMPILER=clang++")
endif()

function(unet_add_fuzzer name fuzzer codec)
  add_executable(${name} ${fuzzer} ${codec})
  target_include_directories(${name} PRIVATE
    ${CMAKE_CURRENT_SOURCE_DIR}/../include
    $<TARGET_PROPERTY:unet::core,INTERFACE_INCLUDE_DIRECTORIES>
    $<TARGET_PROPERTY:unet::verbs,INTERFACE_INCLUDE_DIRECTORIES>)
  target_compile_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_libraries(${name} PRIVATE unet_build_options)
endfunction()
