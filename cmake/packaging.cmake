# cpack: Debian packages named as rdma-core names its own (libibverbs1, libibverbs-dev,
# ibverbs-utils), one per install component of cmake/install.cmake:
#   libunet1     the shared libraries (SOVERSION UNET_SOVERSION)
#   libunet-dev  headers, .so links, CMake package, unet.pc; Depends: libunet1 (= version),
#                libibverbs-dev, librdmacm-dev
#   unet-utils   unet_perf, unet_pingpong, unet_cat; Depends: libunet1 (= version)
# Library dependencies come from dpkg-shlibdeps. Build with -DUNET_SHARED=ON
# -DCMAKE_INSTALL_PREFIX=/usr (Debian's multiarch library directory), then `cpack` in the build
# directory; ci/package.sh does exactly that.
set(UNET_PACKAGE_MAINTAINER "unet developers <unet@localhost>" CACHE STRING
    "Maintainer field of the Debian packages")

set(CPACK_PACKAGE_NAME unet)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")  # every package's first line
set(CPACK_PACKAGE_CONTACT "${UNET_PACKAGE_MAINTAINER}")
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_STRIP_FILES ON)  # the default build type carries -g; packages ship stripped binaries

set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL runtime dev utils)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # libunet1_0.1.0_amd64.deb
set(CPACK_DEBIAN_PACKAGE_VERSION ${PROJECT_VERSION})

# Depends: libunet1 (= version) for the other two, from the component dependencies.
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)
set(CPACK_COMPONENT_DEV_DEPENDS runtime)
set(CPACK_COMPONENT_UTILS_DEPENDS runtime)

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME libunet${UNET_SOVERSION})
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
string(CONCAT CPACK_DEBIAN_RUNTIME_DESCRIPTION
    "The shared libraries: libunet_base (Status), libunet_verbs (RAII over rdma-core),\n"
    "libunet_core (U-Net endpoints: a process's own network interface on InfiniBand, RoCE or\n"
    "SoftRoCE),\n"
    "libunet_uam (U-Net Active Messages), libunet_ulp (user-level protocols) and\n"
    "libunet_boot (jobs of many processes: forked, or launched by mpirun or srun via PMIx).")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME libunet-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "libibverbs-dev, librdmacm-dev")
if(UNET_BOOT_PMIX)  # unet.pc names pmix (Requires.private): pkg-config wants pmix.pc there
  string(APPEND CPACK_DEBIAN_DEV_PACKAGE_DEPENDS ", libpmix-dev")
endif()
string(CONCAT CPACK_DEBIAN_DEV_DESCRIPTION
    "Development files: headers, the CMake package (find_package(unet): unet::verbs,\n"
    "unet::core, unet::uam, unet::ulp, unet::boot) and unet.pc for pkg-config.")

set(CPACK_DEBIAN_UTILS_PACKAGE_NAME unet-utils)
set(CPACK_DEBIAN_UTILS_PACKAGE_SECTION net)
string(CONCAT CPACK_DEBIAN_UTILS_DESCRIPTION
    "Tools: unet_perf (perftest-style benchmarks of unet endpoints, also against ib_send_lat and\n"
    "ibv_rc_pingpong) and unet_pingpong (endpoint ping-pong latency).")

# dpkg-shlibdeps for the binaries: libunet1 gets libibverbs1, librdmacm1, libstdc++6, ...; the
# tools find libunet_*.so.1 in the build tree (the shlibs file below names libunet1 for other
# packages). libunet-dev has no binaries.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_DEV_PACKAGE_SHLIBDEPS OFF)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS)
foreach(layer IN LISTS unet_layers)
  get_target_property(dir unet_${layer} BINARY_DIR)
  list(APPEND CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${dir})
endforeach()

if(NOT UNET_SHARED)
  message(STATUS "cpack: no Debian packages from a static build (-DUNET_SHARED=ON makes them)")
  return()
endif()
include(CPack)
