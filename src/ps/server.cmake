# gradwire_ps_server: the gRPC parameter server over the core (gradwire::ps::start_server).
# gradwire_ps_messages: service messages <-> ps types, shared with the client library.
add_library(gradwire_ps_messages ${CMAKE_CURRENT_SOURCE_DIR}/service_messages.cpp)
target_include_directories(gradwire_ps_messages PUBLIC
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include> $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/src>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_link_libraries(gradwire_ps_messages PUBLIC gradwire_ps_core gradwire_rpc)
set_target_properties(gradwire_ps_messages PROPERTIES EXPORT_NAME ps_messages)

add_library(gradwire_ps_server
  ${CMAKE_CURRENT_SOURCE_DIR}/server.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/server_listen.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/server_checkpoints.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/table_registry.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/service.cpp)
add_library(gradwire::ps_server ALIAS gradwire_ps_server)
target_include_directories(gradwire_ps_server PUBLIC
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include> $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/src>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_link_libraries(gradwire_ps_server PUBLIC gradwire_ps_messages gradwire_ps_core gradwire_rpc)
set_target_properties(gradwire_ps_server PROPERTIES EXPORT_NAME ps_server)
