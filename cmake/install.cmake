# install.cmake: what `cmake --install` puts where, for C programs that use flashlab.
#   include/flashlab/*.h          the public headers, version.h (generated) among them
#   include/flashlab/cuda/        the counted pointer types for anyone's kernel (component
#                                 cuda_headers, with the two plain-C headers they read)
#   lib/libflashlab.so, .a        the library, shared and static; libflashlab_core.a (no GSL)
#   bin/flashlab                  the command line
#   share/flashlab/figures/       the gnuplot scripts `flashlab plot` and `report` run
#   lib/cmake/flashlab/           flashlabConfig.cmake, flashlabConfigVersion.cmake and the
#                                 targets flashlab::flashlab, ::static, ::core, ::cli
#   lib/pkgconfig/flashlab.pc     pkg-config --cflags --libs flashlab
# tests/install/ installs into a temporary prefix and builds a C program against it both ways.
# The Python wheel (pyproject.toml) installs other things: python/CMakeLists.txt.
include(CMakePackageConfigHelpers)

set(FL_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/flashlab)

install(TARGETS flashlab flashlab_static flashlab_core flashlab_cli EXPORT flashlabTargets
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
set_target_properties(flashlab_cli PROPERTIES EXPORT_NAME cli)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/flashlab DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h" PATTERN "footprint.h" EXCLUDE PATTERN "kernel_tiles.h" EXCLUDE)
# The counted pointer types (docs/your_kernel.md §5): kernels/common's counted.cuh and the two
# headers it includes, as PREFIX/include/flashlab/cuda/, with the plain-C headers they read (the
# component alone: examples/check_installed.sh compiles the example against it; a whole install
# has them too).
install(FILES ${PROJECT_SOURCE_DIR}/kernels/common/counted.cuh ${PROJECT_SOURCE_DIR}/kernels/common/common.cuh
        ${PROJECT_SOURCE_DIR}/kernels/common/arch.cuh
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/flashlab/cuda COMPONENT cuda_headers)
install(FILES ${PROJECT_SOURCE_DIR}/include/flashlab/footprint.h ${PROJECT_SOURCE_DIR}/include/flashlab/kernel_tiles.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/flashlab COMPONENT cuda_headers)
install(FILES ${PROJECT_BINARY_DIR}/include/flashlab/version.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/flashlab)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/figures/ DESTINATION ${CMAKE_INSTALL_DATADIR}/flashlab/figures
        FILES_MATCHING PATTERN "*.gp" PATTERN "data" EXCLUDE)

install(EXPORT flashlabTargets NAMESPACE flashlab:: DESTINATION ${FL_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/flashlabConfig.cmake.in
  ${PROJECT_BINARY_DIR}/flashlabConfig.cmake INSTALL_DESTINATION ${FL_CMAKE_DIR})
# 0.x: a minor version may change the API, so only the same major.minor is compatible
write_basic_package_version_file(${PROJECT_BINARY_DIR}/flashlabConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/flashlabConfig.cmake ${PROJECT_BINARY_DIR}/flashlabConfigVersion.cmake
        DESTINATION ${FL_CMAKE_DIR})

# flashlab.pc finds its prefix from its own place (${pcfiledir}) when the directories are relative
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}" OR IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  message(FATAL_ERROR "flashlab.pc: CMAKE_INSTALL_LIBDIR and CMAKE_INSTALL_INCLUDEDIR must be relative to the prefix")
endif()
file(RELATIVE_PATH FL_PC_TO_PREFIX /p/${CMAKE_INSTALL_LIBDIR}/pkgconfig /p)
configure_file(${PROJECT_SOURCE_DIR}/cmake/flashlab.pc.in ${PROJECT_BINARY_DIR}/flashlab.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/flashlab.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
