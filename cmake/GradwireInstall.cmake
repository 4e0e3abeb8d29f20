# `cmake --install` exports gradwire::gradwire for find_package(gradwire).
include(CMakePackageConfigHelpers)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/gradwire DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS gradwire gradwire_common gradwire_comm gradwire_ddp gradwire_models gradwire_torch
  gradwire_rpc gradwire_ps_core gradwire_ps_messages gradwire_ps_server gradwire_ps
  gradwire_data_records gradwire_data
  EXPORT gradwireTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(EXPORT gradwireTargets NAMESPACE gradwire::
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/gradwire)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/gradwireConfig.cmake.in
  ${PROJECT_BINARY_DIR}/gradwireConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/gradwire)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/gradwireConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/gradwireConfig.cmake
  ${PROJECT_BINARY_DIR}/gradwireConfigVersion.cmake ${PROJECT_SOURCE_DIR}/cmake/GradwireDeps.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/gradwire)
