# `cmake --install` rules and the CMake package (find_package(AmpMLIR CONFIG)).
# Included at the end of the top-level CMakeLists.txt, once every target
# exists. See docs/Embedding.md.
#
#   <prefix>/include/amp/...            public headers + generated .inc files
#   <prefix>/lib/libAMP*.a, AmpMLIRPlugin.so, libAmpRuntime.so (when built)
#   <prefix>/bin/amp-opt, amp-translate, amp-run (those that are built)
#   <prefix>/lib/cmake/AmpMLIR/         AmpMLIRConfig.cmake, ...Targets.cmake

include(CMakePackageConfigHelpers)
set(AMP_INSTALL_PACKAGE_DIR lib${LLVM_LIBDIR_SUFFIX}/cmake/AmpMLIR)

# amp/Runtime/Backend is the runtime's interface to its own backends, whose
# functions libAmpRuntime.so does not export: not installed.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/amp
  DESTINATION include
  COMPONENT amp-headers
  FILES_MATCHING PATTERN "*.h" PATTERN "*.def" PATTERN "*.td"
  REGEX "/Runtime/Backend(/|$)" EXCLUDE)
install(DIRECTORY ${PROJECT_BINARY_DIR}/include/amp
  DESTINATION include
  COMPONENT amp-headers
  FILES_MATCHING PATTERN "*.inc"
  PATTERN "CMakeFiles" EXCLUDE)

# The imported targets, as AmpMLIR::<name>: the dialect, the passes (with
# the pipeline API), the ONNX importer/exporter, the runtime when it is built
# and the mlir-opt plugin.
set(AMP_EXPORTED_TARGETS
  AMPInterfaces AMPTrainDialect AMPTrainTransforms AMPAmpRTDialect
  AMPTrainToRuntime AMPTargetONNX AmpMLIRPlugin)
if(TARGET AmpRuntime)
  list(APPEND AMP_EXPORTED_TARGETS AmpRuntime)
endif()
# Installed binaries find libMLIR.so/libLLVM.so where they were built against.
set_target_properties(AmpMLIRPlugin PROPERTIES
  INSTALL_RPATH "${LLVM_LIBRARY_DIR}")
install(TARGETS ${AMP_EXPORTED_TARGETS}
  EXPORT AmpMLIRTargets
  COMPONENT amp-libraries
  ARCHIVE DESTINATION lib${LLVM_LIBDIR_SUFFIX}
  LIBRARY DESTINATION lib${LLVM_LIBDIR_SUFFIX}
  RUNTIME DESTINATION bin
  INCLUDES DESTINATION include)
install(EXPORT AmpMLIRTargets
  NAMESPACE AmpMLIR::
  DESTINATION ${AMP_INSTALL_PACKAGE_DIR}
  COMPONENT amp-cmake)

foreach(tool amp-opt amp-translate amp-run)
  if(TARGET ${tool})
    # LLVM's rules give $ORIGIN/../lib only; libMLIR.so is not on the
    # loader's default path (/usr/lib/llvm-22/lib on Debian).
    set_target_properties(${tool} PROPERTIES
      INSTALL_RPATH "\$ORIGIN/../lib${LLVM_LIBDIR_SUFFIX};${LLVM_LIBRARY_DIR}")
    install(TARGETS ${tool} RUNTIME DESTINATION bin COMPONENT amp-tools)
  endif()
endforeach()

configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/cmake/AmpMLIRConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/AmpMLIRConfig.cmake
  INSTALL_DESTINATION ${AMP_INSTALL_PACKAGE_DIR})
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/cmake/AmpMLIRConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/cmake/AmpMLIRConfig.cmake
  ${PROJECT_BINARY_DIR}/cmake/AmpMLIRConfigVersion.cmake
  DESTINATION ${AMP_INSTALL_PACKAGE_DIR}
  COMPONENT amp-cmake)
