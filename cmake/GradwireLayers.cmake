# The walls between layers (docs/architecture.md "Walls"). A library target compiles with its own
# folder (private) and, of every other layer, only the headers of the targets it links. Each
# target's headers are exposed through a folder of its own in the build tree,
# <build>/headers/<target>/, holding links to exactly the headers it offers, so linking
# gradwire_comm makes "gradwire/comm/..." visible and nothing of ddp, ps or data.

# gradwire_offer_headers(<target> <include path> <source file or folder> [...])
# Public headers, from include/gradwire/ (what `cmake --install` installs):
#   gradwire_offer_headers(gradwire_comm gradwire/comm ${PROJECT_SOURCE_DIR}/include/gradwire/comm)
# Installed targets find the same paths under the install prefix's include/. A header from src/ is
# never offered this way: an internal layer (rpc, ps/messages) offers its headers with
# gradwire_offer_internal_headers.
function(gradwire_offer_headers target)
  set(root ${PROJECT_BINARY_DIR}/headers/${target})
  set(pairs ${ARGN})
  list(LENGTH pairs count)
  math(EXPR odd "${count} % 2")
  if(count EQUAL 0 OR odd)
    message(FATAL_ERROR "gradwire_offer_headers(${target}): give <include path> <source> pairs")
  endif()
  while(pairs)
    list(POP_FRONT pairs include_path source)
    if(NOT EXISTS ${source})
      message(FATAL_ERROR "gradwire_offer_headers(${target}): ${source} does not exist")
    endif()
    string(FIND "${source}" "${PROJECT_SOURCE_DIR}/include/" at)
    if(NOT at EQUAL 0)
      message(FATAL_ERROR "gradwire_offer_headers(${target}): ${source} is not under include/; "
        "offer an internal layer's headers with gradwire_offer_internal_headers")
    endif()
    get_filename_component(parent ${root}/${include_path} DIRECTORY)
    file(MAKE_DIRECTORY ${parent})
    file(CREATE_LINK ${source} ${root}/${include_path} SYMBOLIC)
  endwhile()
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "INTERFACE_LIBRARY")
    set(scope INTERFACE)
  else()
    set(scope PUBLIC)
  endif()
  target_include_directories(${target} ${scope}
    $<BUILD_INTERFACE:${root}> $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
endfunction()

# gradwire_offer_internal_headers(<target> <include path> <folder>)
# Headers for the layers built on <target> inside gradwire (and for its tests), not for its users:
# they hang on <target>_internal, which such a layer links as
# `PRIVATE <target> $<BUILD_INTERFACE:<target>_internal>`. <target> itself sees them too.
#   gradwire_offer_internal_headers(gradwire_ps_core ps/core ${CMAKE_CURRENT_SOURCE_DIR})
function(gradwire_offer_internal_headers target include_path folder)
  set(root ${PROJECT_BINARY_DIR}/headers/${target}_internal)
  get_filename_component(parent ${root}/${include_path} DIRECTORY)
  file(MAKE_DIRECTORY ${parent})
  file(CREATE_LINK ${folder} ${root}/${include_path} SYMBOLIC)
  target_include_directories(${target} PRIVATE ${root})
  add_library(${target}_internal INTERFACE)
  target_include_directories(${target}_internal INTERFACE ${root})
  target_link_libraries(${target}_internal INTERFACE ${target})
endfunction()
