# Debian packages of rlock, made by CPack from a build configured with
# -DCMAKE_INSTALL_PREFIX=/usr (GNUInstallDirs then picks the multiarch
# libdir):
#
#   cmake -S . -B build-deb -DCMAKE_INSTALL_PREFIX=/usr \
#         -DRLOCK_BUILD_TESTS=OFF -DRLOCK_BUILD_EXAMPLES=OFF
#   cmake --build build-deb && (cd build-deb && cpack -G DEB)
#
# One package per install component (see the install rules in CMakeLists.txt):
#   librlockN     runtime  the shared library (N = SOVERSION)     Section: libs
#   librlock-dev  dev      headers, .so link, static library,     Section: libdevel
#                          CMake package, rlock.pc
#   rlock-tools   tools    the rlock command and its man page,    Section: utils
#                          when the tree builds rlock_cli
#
# Included last by CMakeLists.txt, top-level builds only: it looks for the
# targets defined before it (rlock_cli), and a parent project keeps its own
# CPack settings. tests/packaging/deb.sh builds, installs and checks these.

set(RLOCK_PACKAGE_MAINTAINER "rlock maintainers <maintainers@users.noreply.a-seed-bee58c42.example>"
  CACHE STRING "Maintainer field of the Debian packages")

set(RL_PKG_LIB librlock${PROJECT_VERSION_MAJOR})
set(RL_PKG_DEV librlock-dev)
set(RL_PKG_TOOLS rlock-tools)

set(RL_COMPONENTS runtime dev)
if(TARGET rlock_cli)
  list(APPEND RL_COMPONENTS tools)
endif()

# /usr/share/doc/<package>/copyright in every package, in Debian's
# machine-readable format, the license text from LICENSE. Only the packages
# carry it (EXCLUDE_FROM_ALL: a plain `cmake --install` does not).
file(READ ${PROJECT_SOURCE_DIR}/LICENSE _rl_license)
string(REGEX MATCH "Copyright \\(c\\) ([^\n]*)" _rl_holder "${_rl_license}")
set(_rl_holder "${CMAKE_MATCH_1}")
# The text, indented by one space, an empty line written " .".
string(REGEX REPLACE "\n$" "" _rl_license "${_rl_license}")
string(REPLACE "\n" "\n " _rl_license " ${_rl_license}")
string(REPLACE "\n \n" "\n .\n" _rl_license "${_rl_license}")
string(REPLACE "\n \n" "\n .\n" _rl_license "${_rl_license}")
file(WRITE ${PROJECT_BINARY_DIR}/copyright
"Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: rlock

Files: *
Copyright: ${_rl_holder}
License: BSD-3-Clause

License: BSD-3-Clause
${_rl_license}
")
foreach(_rl_comp ${RL_COMPONENTS})
  if(_rl_comp STREQUAL "runtime")
    set(_rl_pkg ${RL_PKG_LIB})
  elseif(_rl_comp STREQUAL "dev")
    set(_rl_pkg ${RL_PKG_DEV})
  else()
    set(_rl_pkg ${RL_PKG_TOOLS})
  endif()
  install(FILES ${PROJECT_BINARY_DIR}/copyright
    DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${_rl_pkg}
    COMPONENT ${_rl_comp} EXCLUDE_FROM_ALL)
endforeach()

# --- CPack -------------------------------------------------------------------
# Each package's description: its own synopsis, then the common text. (No
# CPACK_PACKAGE_DESCRIPTION_SUMMARY: CPack would put it before every one.)
set(_rl_long "rlock gives C programs reentrant, per-thread locks shared by many processes
and hosts, held in Redis (a single server, Redis Cluster, Redlock or
Sentinel) and renewed by a watchdog while held.
")

set(CPACK_PACKAGE_NAME rlock)
set(CPACK_PACKAGE_VENDOR "the rlock authors")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "${RLOCK_PACKAGE_MAINTAINER}")
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_STRIP_FILES ON)
set(CPACK_COMPONENTS_ALL ${RL_COMPONENTS})
set(CPACK_DEB_COMPONENT_INSTALL ON)

set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${RLOCK_PACKAGE_MAINTAINER}")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
# Depends from the ELF files (dpkg-shlibdeps): libc6, libuuid1 and
# libhiredis0.14 (Debian 12) or libhiredis1.1.0 (Debian 13). A component's
# CPACK_COMPONENT_<C>_DEPENDS becomes a dependency on that package at the
# same version.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)
# DEBIAN/shlibs for librlock.so.N (only the runtime package has a shared
# library), for the packages built against it; CPack adds the ldconfig calls.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME ${RL_PKG_LIB})
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_RUNTIME_DESCRIPTION
  "distributed reentrant locks on Redis for C (shared library)
${_rl_long}
This package contains the shared library.")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME ${RL_PKG_DEV})
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_DESCRIPTION
  "distributed reentrant locks on Redis for C (development files)
${_rl_long}
This package contains the headers, the static library, the CMake package
(find_package(rlock)) and the pkg-config file (rlock.pc).")
# The static library and rlock.pc (Requires.private: hiredis uuid libssl
# libcrypto) need hiredis's, libuuid's and OpenSSL's development files.
set(CPACK_COMPONENT_DEV_DEPENDS runtime)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "libhiredis-dev, uuid-dev, libssl-dev")

set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME ${RL_PKG_TOOLS})
set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_TOOLS_DESCRIPTION
  "distributed reentrant locks on Redis for C (command-line tool)
${_rl_long}
This package contains the rlock command.")
set(CPACK_COMPONENT_TOOLS_DEPENDS runtime)
# dpkg-shlibdeps meets librlock.so.N, not yet installed from any package, in
# the runtime component's staging directory.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS
  ${PROJECT_BINARY_DIR}/_CPack_Packages/Linux/DEB/${CPACK_PACKAGE_NAME}-${PROJECT_VERSION}-Linux/runtime${CMAKE_INSTALL_FULL_LIBDIR})

set(CPACK_SOURCE_GENERATOR TGZ)
set(CPACK_SOURCE_IGNORE_FILES "/\\\\.git/" "/build[^/]*/" "~$")

include(CPack)

unset(_rl_license)
unset(_rl_holder)
unset(_rl_long)
unset(_rl_comp)
unset(_rl_pkg)
