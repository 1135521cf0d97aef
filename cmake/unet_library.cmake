# unet_add_library(<layer> SOURCES <src>... LINK <target>...)
#
# One unet layer library: target unet_<layer> (alias and export name unet::<layer>), built
# ${UNET_LIBRARY_TYPE} with the shared library version, its public headers in <layer>/include,
# C++20 for consumers, `LINK` as its public dependencies, and the build-only options kept private.
function(unet_add_library layer)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "SOURCES;LINK")
  if(NOT arg_SOURCES)
    message(FATAL_ERROR "unet_add_library(${layer}): no SOURCES")
  endif()
  set(t unet_${layer})
  add_library(${t} ${UNET_LIBRARY_TYPE} ${arg_SOURCES})
  add_library(unet::${layer} ALIAS ${t})
  set_target_properties(${t} PROPERTIES EXPORT_NAME ${layer} OUTPUT_NAME ${t}
    VERSION ${UNET_LIBRARY_VERSION} SOVERSION ${UNET_SOVERSION})
  target_include_directories(${t} PUBLIC
    $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_link_libraries(${t} PUBLIC ${arg_LINK} PRIVATE $<BUILD_INTERFACE:unet_build_options>)
  target_compile_features(${t} PUBLIC cxx_std_20)
endfunction()
