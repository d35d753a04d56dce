# ---- cmake --install: the tools, the runtime library and its headers, a CMake package ----
#
#   bin/dslc, bin/kiln-run                 the compiler and the bundle runner
#   lib/libkiln_runtime.so                 the C API (kiln_runtime.h), nothing else exported
#   lib/libkiln.so                         the JIT's C API (kiln_jit.h) and the runtime's
#   include/kiln/runtime/kiln_runtime.h    C
#   include/kiln/runtime/Runtime.h         C++ (header-only, over the C API)
#   include/kiln/jit/kiln_jit.h, Jit.h     the JIT: C, and C++ over it
#   share/kiln/stdlib/                     the standard library dslc imports from
#   lib/cmake/Kiln/                        find_package(Kiln): Kiln::runtime, Kiln::jit
#   lib/pkgconfig/kiln-runtime.pc, kiln.pc pkg-config --cflags --libs kiln-runtime (or kiln)
#
# docs/runtime.md ("Installing") shows a consumer; tests/install/ builds one against an
# installed tree.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(KILN_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/Kiln")

set_target_properties(kiln_runtime_shared PROPERTIES EXPORT_NAME runtime)
target_include_directories(kiln_runtime_shared INTERFACE
  "$<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/kiln>")
install(TARGETS kiln_runtime_shared EXPORT KilnTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES runtime/kiln_runtime.h runtime/Runtime.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kiln/runtime)
if(TARGET kiln_jit_shared)
  # libkiln.so links LLVM from Debian's llvm-22 folder; the installed library keeps that path.
  set_target_properties(kiln_jit_shared PROPERTIES EXPORT_NAME jit INSTALL_RPATH_USE_LINK_PATH TRUE)
  target_include_directories(kiln_jit_shared INTERFACE "$<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/kiln>")
  install(TARGETS kiln_jit_shared EXPORT KilnTargets LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(FILES jit/kiln_jit.h jit/Jit.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kiln/jit)
endif()
install(EXPORT KilnTargets NAMESPACE Kiln:: DESTINATION ${KILN_INSTALL_CMAKEDIR})

configure_package_config_file(cmake/KilnConfig.cmake.in "${CMAKE_CURRENT_BINARY_DIR}/KilnConfig.cmake"
                              INSTALL_DESTINATION ${KILN_INSTALL_CMAKEDIR})
write_basic_package_version_file("${CMAKE_CURRENT_BINARY_DIR}/KilnConfigVersion.cmake"
                                 COMPATIBILITY SameMinorVersion)
install(FILES "${CMAKE_CURRENT_BINARY_DIR}/KilnConfig.cmake" "${CMAKE_CURRENT_BINARY_DIR}/KilnConfigVersion.cmake"
        DESTINATION ${KILN_INSTALL_CMAKEDIR})

file(RELATIVE_PATH KILN_PC_TO_PREFIX "/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/")
configure_file(cmake/kiln-runtime.pc.in "${CMAKE_CURRENT_BINARY_DIR}/kiln-runtime.pc" @ONLY)
install(FILES "${CMAKE_CURRENT_BINARY_DIR}/kiln-runtime.pc" DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
if(TARGET kiln_jit_shared)
  configure_file(cmake/kiln.pc.in "${CMAKE_CURRENT_BINARY_DIR}/kiln.pc" @ONLY)
  install(FILES "${CMAKE_CURRENT_BINARY_DIR}/kiln.pc" DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endif()

if(KILN_BUILD_TOOLS)
  # The installed tools keep the RPATH of the libraries they link from outside the tree
  # (LLVM's, Debian's llvm-22 folder).
  set_target_properties(dslc kiln-run PROPERTIES INSTALL_RPATH_USE_LINK_PATH TRUE)
  install(TARGETS dslc kiln-run RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  install(DIRECTORY stdlib/ DESTINATION ${CMAKE_INSTALL_DATADIR}/kiln/stdlib FILES_MATCHING PATTERN "*.kiln")
endif()
