# memplan_stage(NAME name [DEPENDS stage...] [LINK target...])
#
# One stage of the pipeline (docs/library.md, "The stages behind it"): the
# sources src/<name>/*.cpp (and its subfolders) as an object library
# memplan_<name>. A stage sees the public headers (include/memplan), its own
# folder and the folders of the stages it depends on, directly or through
# them, and nothing else: its include path is a folder of links to exactly
# those folders, so an include of a later stage's header fails to compile.
# (The symbols it calls are checked by the test layers.symbols.)
#
# Each call appends the stage to MEMPLAN_STAGES and sets, for it,
# MEMPLAN_STAGE_DEPENDS_<name> (as declared), MEMPLAN_STAGE_SEES_<name>
# (itself and every stage under it) and MEMPLAN_STAGE_SOURCES_<name>: the
# top-level CMakeLists.txt builds the one library users link
# (memplan::memplan) and the layers.symbols test from them.
set(MEMPLAN_STAGES "")

function(memplan_stage)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "NAME" "DEPENDS;LINK")
  set(name ${arg_NAME})
  set(seen ${name})
  foreach(dep ${arg_DEPENDS})
    if(NOT dep IN_LIST MEMPLAN_STAGES)
      message(FATAL_ERROR "memplan_stage(${name}): stage '${dep}' is not declared before it")
    endif()
    list(APPEND seen ${dep} ${MEMPLAN_STAGE_SEES_${dep}})
  endforeach()
  list(REMOVE_DUPLICATES seen)
  set(MEMPLAN_STAGE_SEES_${name} ${seen} PARENT_SCOPE)
  set(MEMPLAN_STAGE_DEPENDS_${name} ${arg_DEPENDS} PARENT_SCOPE)

  file(GLOB_RECURSE sources CONFIGURE_DEPENDS
       "${CMAKE_CURRENT_SOURCE_DIR}/src/${name}/*.cpp")
  list(SORT sources)
  set(view "${CMAKE_CURRENT_BINARY_DIR}/stage_include/${name}")
  file(REMOVE_RECURSE "${view}")
  file(MAKE_DIRECTORY "${view}")
  foreach(folder ${seen})
    file(CREATE_LINK "${CMAKE_CURRENT_SOURCE_DIR}/src/${folder}" "${view}/${folder}" SYMBOLIC)
  endforeach()

  add_library(memplan_${name} OBJECT ${sources})
  target_compile_features(memplan_${name} PUBLIC cxx_std_20)
  target_include_directories(memplan_${name}
    PUBLIC $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>
    PRIVATE "${view}")
  target_link_libraries(memplan_${name} PRIVATE ${arg_LINK})
  memplan_warnings(memplan_${name})
  set(MEMPLAN_STAGES ${MEMPLAN_STAGES} ${name} PARENT_SCOPE)
  set(MEMPLAN_STAGE_SOURCES_${name} ${sources} PARENT_SCOPE)
endfunction()
