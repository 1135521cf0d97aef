# Installing unet: headers, libraries and tools, find_package(unet CONFIG) with unet:: targets,
# and unet.pc. Install components (cpack makes one Debian package of each, cmake/packaging.cmake):
#   runtime  the shared libraries                           -> libunet1
#   dev      headers, .so links or static archives, CMake package, unet.pc  -> libunet-dev
#   utils    unet_perf, unet_pingpong and unet_cat          -> unet-utils
include(CMakePackageConfigHelpers)

# The layers, bottom-up.
set(unet_layers)
foreach(layer IN ITEMS base verbs core uam ulp boot)
  if(TARGET unet_${layer})
    list(APPEND unet_layers ${layer})
  endif()
endforeach()

# unet_build_options is linked only as $<BUILD_INTERFACE:...>, so no export names it; install(EXPORT)
# fails at generate time if one does.
foreach(layer IN LISTS unet_layers)
  install(TARGETS unet_${layer} EXPORT unetTargets
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT dev
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${layer}/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
    COMPONENT dev FILES_MATCHING PATTERN "*.h")
endforeach()

# The user-facing tools (bench/interop is a library inside unet_perf: --oob rc_pingpong|ib_send_lat).
# A tool finds the libraries through RUNPATH only when they are not in a system directory.
set(unet_tools)
foreach(tool IN ITEMS unet_perf unet_pingpong unet_cat)
  if(TARGET ${tool})
    list(APPEND unet_tools ${tool})
  endif()
endforeach()
if(unet_tools)
  if(UNET_SHARED AND NOT CMAKE_INSTALL_FULL_LIBDIR IN_LIST CMAKE_CXX_IMPLICIT_LINK_DIRECTORIES)
    file(RELATIVE_PATH bin_to_lib ${CMAKE_INSTALL_FULL_BINDIR} ${CMAKE_INSTALL_FULL_LIBDIR})
    set_target_properties(${unet_tools} PROPERTIES INSTALL_RPATH "$ORIGIN/${bin_to_lib}")
  endif()
  install(TARGETS ${unet_tools} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT utils)
endif()

# Everything the rules above install, as one target: ci/package.sh builds only that.
add_custom_target(unet_installable)
foreach(layer IN LISTS unet_layers)
  add_dependencies(unet_installable unet_${layer})
endforeach()
if(unet_tools)
  add_dependencies(unet_installable ${unet_tools})
endif()

# find_package(unet CONFIG): unet::base, unet::verbs, unet::core, unet::uam, unet::ulp, unet::boot;
# unetConfig.cmake makes the pkg-config targets of rdma-core that unet::verbs links, and PMIx's
# when a static unet::boot was built with it.
set(UNET_PMIX_LINKED ${UNET_BOOT_PMIX})
if(UNET_SHARED)
  set(UNET_PMIX_LINKED OFF)  # inside libunet_boot.so: consumers need no PMIx of their own
endif()
set(unet_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/unet)
install(EXPORT unetTargets NAMESPACE unet:: DESTINATION ${unet_cmake_dir} COMPONENT dev)
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/unetConfig.cmake.in
  ${PROJECT_BINARY_DIR}/unetConfig.cmake INSTALL_DESTINATION ${unet_cmake_dir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/unetConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/unetConfig.cmake ${PROJECT_BINARY_DIR}/unetConfigVersion.cmake
  DESTINATION ${unet_cmake_dir} COMPONENT dev)

# unet.pc: the libraries top layer first, so a static link resolves each against those below it.
set(UNET_PC_LIBS)
foreach(layer IN LISTS unet_layers)
  get_target_property(name unet_${layer} OUTPUT_NAME)
  list(PREPEND UNET_PC_LIBS -l${name})
endforeach()
list(JOIN UNET_PC_LIBS " " UNET_PC_LIBS)
# PMIx, when unet::boot links it: a static library needs it at link time, a shared one only its
# headers' existence checked (Requires.private).
set(UNET_PC_REQUIRES "libibverbs librdmacm")
set(UNET_PC_REQUIRES_PRIVATE "")
if(UNET_BOOT_PMIX AND UNET_SHARED)
  set(UNET_PC_REQUIRES_PRIVATE "pmix")
elseif(UNET_BOOT_PMIX)
  string(APPEND UNET_PC_REQUIRES " pmix")
endif()
configure_file(${CMAKE_CURRENT_LIST_DIR}/unet.pc.in ${PROJECT_BINARY_DIR}/unet.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/unet.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT dev)
