# `cmake --install`: headers, libraries and find_package(gradwire [COMPONENTS ps data]) files.
# The core (gradwire::gradwire: comm, ddp, launch, models) is one export set; each optional
# component has its own, read only when asked for, so a DDP-only program finds and links no gRPC.
include(CMakePackageConfigHelpers)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/gradwire DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

function(gradwire_install_export set)
  install(TARGETS ${ARGN} EXPORT ${set}
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  install(EXPORT ${set} NAMESPACE gradwire:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/gradwire)
endfunction()

gradwire_install_export(gradwireTargets gradwire gradwire_common gradwire_comm gradwire_comm_core
  gradwire_comm_diagnostics gradwire_comm_shm gradwire_comm_hierarchical gradwire_ddp
  gradwire_elastic gradwire_models gradwire_torch)
set(GRADWIRE_INSTALLED_COMPONENTS "")
if(GRADWIRE_PS)
  gradwire_install_export(gradwirePsTargets gradwire_rpc gradwire_ps_core gradwire_ps_messages
    gradwire_ps_server gradwire_ps_client gradwire_ps)
  list(APPEND GRADWIRE_INSTALLED_COMPONENTS ps)
endif()
if(GRADWIRE_DATA)
  gradwire_install_export(gradwireDataTargets gradwire_data_records gradwire_data)
  list(APPEND GRADWIRE_INSTALLED_COMPONENTS data)
endif()

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/gradwireConfig.cmake.in
  ${PROJECT_BINARY_DIR}/gradwireConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/gradwire)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/gradwireConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/gradwireConfig.cmake
  ${PROJECT_BINARY_DIR}/gradwireConfigVersion.cmake ${PROJECT_SOURCE_DIR}/cmake/GradwireDeps.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/gradwire)
