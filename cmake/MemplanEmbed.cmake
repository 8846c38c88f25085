# memplan_embed_files(TARGET tgt HEADER include/path.h NAMESPACE ns
#                     [SOURCES src...] FILES kName1 path1 kName2 path2 ...)
#
# Generates ${CMAKE_CURRENT_BINARY_DIR}/generated/<HEADER> at build time
# (cmake -P embed_files.cmake: no Python or other tool needed) with each
# file as a std::string_view constant, regenerates it when a file changes,
# and adds the generated folder to the include path of SOURCES (the files
# that include the header), else of all of TGT's sources. (Only SOURCES'
# commands then name the build directory: the other objects' are the same
# in every build tree, which lets ccache share them between trees.)
set(MEMPLAN_EMBED_SCRIPT "${CMAKE_CURRENT_LIST_DIR}/embed_files.cmake")

function(memplan_embed_files)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "TARGET;HEADER;NAMESPACE" "FILES;SOURCES")
  list(LENGTH arg_FILES n)
  math(EXPR odd "${n} % 2")
  if(n EQUAL 0 OR odd)
    message(FATAL_ERROR "memplan_embed_files: FILES takes name/path pairs")
  endif()
  set(out_dir "${CMAKE_CURRENT_BINARY_DIR}/generated")
  set(output "${out_dir}/${arg_HEADER}")
  set(defs -DOUTPUT=${output} -DNAMESPACE=${arg_NAMESPACE})
  set(depends "${MEMPLAN_EMBED_SCRIPT}")
  set(i 0)
  while(arg_FILES)
    list(POP_FRONT arg_FILES name path)
    cmake_path(ABSOLUTE_PATH path BASE_DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}")
    list(APPEND defs -DNAME_${i}=${name} -DFILE_${i}=${path})
    list(APPEND depends "${path}")
    math(EXPR i "${i} + 1")
  endwhile()
  get_filename_component(dir "${output}" DIRECTORY)
  add_custom_command(
    OUTPUT "${output}"
    COMMAND "${CMAKE_COMMAND}" -E make_directory "${dir}"
    COMMAND "${CMAKE_COMMAND}" ${defs} -DCOUNT=${i} -P "${MEMPLAN_EMBED_SCRIPT}"
    DEPENDS ${depends}
    COMMENT "Embedding ${arg_HEADER}"
    VERBATIM)
  target_sources(${arg_TARGET} PRIVATE "${output}")
  if(arg_SOURCES)
    set_property(SOURCE ${arg_SOURCES} TARGET_DIRECTORY ${arg_TARGET}
                 APPEND PROPERTY INCLUDE_DIRECTORIES "${out_dir}")
  else()
    target_include_directories(${arg_TARGET} PRIVATE "${out_dir}")
  endif()
endfunction()
