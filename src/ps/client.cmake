# gradwire_ps: the trainers' side: the client (client.cpp, id_routing.cpp) and the remote
# embedding modules (embedding.cpp). Never depends on the server library.
add_library(gradwire_ps
  ${CMAKE_CURRENT_LIST_DIR}/id_routing.cpp
  ${CMAKE_CURRENT_LIST_DIR}/client.cpp
  ${CMAKE_CURRENT_LIST_DIR}/embedding.cpp)
add_library(gradwire::ps ALIAS gradwire_ps)
target_include_directories(gradwire_ps PUBLIC
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include> $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/src>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_link_libraries(gradwire_ps PUBLIC gradwire_ps_messages gradwire_ps_core gradwire_rpc
  gradwire_torch)
set_target_properties(gradwire_ps PROPERTIES EXPORT_NAME ps)
