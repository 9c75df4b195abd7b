# `cmake --install BUILD --prefix P`: what a site puts in a module tree or a Spack prefix.
#
#   P/lib/libmpiopt.so, libmpiopt-profile.so, libmpiopt_fortran.a (Fortran on)
#   P/include/mpiopt*.h, mpiopt.mod (Fortran on)
#   P/lib/cmake/mpiopt/mpioptConfig.cmake, …ConfigVersion.cmake, …Targets.cmake: find_package(mpiopt)
#     gives mpiopt::mpiopt (and mpiopt::profile, mpiopt::fortran)
#   P/lib/pkgconfig/mpiopt.pc
#   P/bin/mpiopt-*: the benchmark programs (test programs stay in the build tree)
#   P/share/doc/mpiopt: README.md and docs/*.md
#
# Everything installed is relocatable: programs find the library through $ORIGIN (CMakeLists.txt),
# the CMake files through their own location, the .pc file through ${pcfiledir}. No build or source
# path is written into an installed file.

include(CMakePackageConfigHelpers)
set(MPIOPT_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/mpiopt)

set(_targets mpiopt)
if(TARGET mpiopt-profile)
  set_target_properties(mpiopt-profile PROPERTIES EXPORT_NAME profile)
  target_include_directories(mpiopt-profile INTERFACE $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  list(APPEND _targets mpiopt-profile)
endif()
if(TARGET mpiopt_fortran)
  list(APPEND _targets mpiopt_fortran)
endif()
install(TARGETS ${_targets} EXPORT mpioptTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(TARGET mpiopt_fortran)
  # compiler-specific, like every .mod: usable with the Fortran compiler that built it
  install(FILES ${CMAKE_BINARY_DIR}/lib/mpiopt.mod DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endif()
file(GLOB _headers ${CMAKE_SOURCE_DIR}/include/mpiopt*.h)
install(FILES ${_headers} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

install(TARGETS ${MPIOPT_BENCH_TARGETS} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

file(GLOB _docs ${CMAKE_SOURCE_DIR}/docs/*.md)
install(FILES ${CMAKE_SOURCE_DIR}/README.md ${_docs} DESTINATION ${CMAKE_INSTALL_DOCDIR})

# ---- CMake package ----
install(EXPORT mpioptTargets NAMESPACE mpiopt:: DESTINATION ${MPIOPT_CMAKE_DIR})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/mpioptConfig.cmake.in
  ${CMAKE_BINARY_DIR}/mpioptConfig.cmake INSTALL_DESTINATION ${MPIOPT_CMAKE_DIR})
# 0.x: a minor version may change the API, so only the same minor version is compatible
write_basic_package_version_file(${CMAKE_BINARY_DIR}/mpioptConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/mpioptConfig.cmake ${CMAKE_BINARY_DIR}/mpioptConfigVersion.cmake
  DESTINATION ${MPIOPT_CMAKE_DIR})

# ---- pkg-config ----
# prefix relative to the .pc file's own directory (pkg-config's ${pcfiledir}): ../.. for lib/pkgconfig,
# ../../.. for Debian's lib/x86_64-linux-gnu/pkgconfig
file(RELATIVE_PATH MPIOPT_PC_TO_PREFIX /root/${CMAKE_INSTALL_LIBDIR}/pkgconfig /root)
string(REGEX REPLACE "/$" "" MPIOPT_PC_TO_PREFIX "${MPIOPT_PC_TO_PREFIX}")
configure_file(${CMAKE_CURRENT_LIST_DIR}/mpiopt.pc.in ${CMAKE_BINARY_DIR}/mpiopt.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/mpiopt.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
