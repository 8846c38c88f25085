# Writes a C++ header holding files as byte arrays (run with cmake -P at
# build time; memplan_embed_files() in MemplanEmbed.cmake sets it up).
#
#   -DOUTPUT=header.h -DNAMESPACE=ns -DCOUNT=n
#   -DNAME_<i>=kIdentifier -DFILE_<i>=path   for i in 0 .. n-1
#
# Each file becomes `inline constexpr std::string_view NAME` over a
# NUL-terminated array. The header depends only on the files' bytes (no
# dates, no absolute paths), and is rewritten only when it changes.
cmake_minimum_required(VERSION 3.25)
foreach(var OUTPUT NAMESPACE COUNT)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "embed_files.cmake: ${var} is not set")
  endif()
endforeach()

set(text "// Generated at build time by cmake/embed_files.cmake: do not edit.\n")
string(APPEND text "#pragma once\n\n#include <string_view>\n\nnamespace ${NAMESPACE} {\n")
math(EXPR last "${COUNT} - 1")
foreach(i RANGE ${last})
  set(name "${NAME_${i}}")
  set(file "${FILE_${i}}")
  if(NOT EXISTS "${file}")
    message(FATAL_ERROR "embed_files.cmake: ${file} not found")
  endif()
  file(READ "${file}" hex HEX)
  string(LENGTH "${hex}" digits)
  math(EXPR bytes "${digits} / 2")
  # 16 bytes a line: "0x3c,0x21,...".
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," hex "${hex}")
  string(REPEAT "0x[0-9a-f][0-9a-f]," 16 line)
  string(REGEX REPLACE "(${line})" "\\1\n" hex "${hex}")
  get_filename_component(base "${file}" NAME)
  string(APPEND text "\n// ${base}, ${bytes} bytes.\n")
  string(APPEND text "inline constexpr char ${name}Bytes[] = {\n${hex}0x00};\n")
  string(APPEND text "inline constexpr std::string_view ${name}{${name}Bytes, ${bytes}};\n")
endforeach()
string(APPEND text "\n}  // namespace ${NAMESPACE}\n")

file(WRITE "${OUTPUT}.tmp" "${text}")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
