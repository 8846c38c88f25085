# The install test (ctest: install.consumer): installs the build tree into a
# scratch prefix, checks what landed there, then builds and runs the
# consumer project (tests/install) against it twice: through
# find_package(memplan), and through pkg-config. Finally runs the installed
# CLI on an example graph.
#
#   cmake -DBUILD_DIR=... -DSOURCE_DIR=<tests/install> -DWORK_DIR=...
#         -DGENERATOR=... -DCXX=... -DBUILD_TYPE=... -DLIBDIR=... -DBINDIR=...
#         -DINCLUDEDIR=... -DVERSION=... -DEXAMPLE=<graph.json> [-DSANITIZE=ON]
#         -P run.cmake
cmake_minimum_required(VERSION 3.25)

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " cmd "${ARGN}")
    message(FATAL_ERROR "install test: `${cmd}` failed (${rc})\n${out}\n${err}")
  endif()
  set(run_output "${out}" PARENT_SCOPE)
endfunction()

set(prefix "${WORK_DIR}/prefix")
file(REMOVE_RECURSE "${WORK_DIR}")

# 1. Install.
run("${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${prefix}")

# 2. What an install must hold, and nothing of memplan's internals.
foreach(f "${LIBDIR}/libmemplan.a" "${BINDIR}/memplan" "${INCLUDEDIR}/memplan/plan.h"
          "${INCLUDEDIR}/memplan/verify.h" "${INCLUDEDIR}/memplan/import.h"
          "${LIBDIR}/cmake/memplan/memplanConfig.cmake"
          "${LIBDIR}/cmake/memplan/memplanConfigVersion.cmake"
          "${LIBDIR}/cmake/memplan/memplanTargets.cmake" "${LIBDIR}/pkgconfig/memplan.pc")
  if(NOT EXISTS "${prefix}/${f}")
    message(FATAL_ERROR "install test: ${f} was not installed")
  endif()
endforeach()
file(GLOB_RECURSE headers RELATIVE "${prefix}/${INCLUDEDIR}" "${prefix}/${INCLUDEDIR}/*")
foreach(h IN LISTS headers)
  if(NOT h MATCHES "^memplan/[a-z_]+\\.h$")
    message(FATAL_ERROR "install test: unexpected file ${INCLUDEDIR}/${h}")
  endif()
endforeach()
file(READ "${prefix}/${LIBDIR}/cmake/memplan/memplanTargets.cmake" targets)
foreach(leak "${BUILD_DIR}" "${SOURCE_DIR}")
  string(FIND "${targets}" "${leak}" at)
  if(NOT at EQUAL -1)
    message(FATAL_ERROR "install test: memplanTargets.cmake names ${leak}")
  endif()
endforeach()

set(flags "")
if(SANITIZE)
  set(flags "-fsanitize=address,undefined -fno-omit-frame-pointer")
endif()

# 3. find_package(memplan).
run("${CMAKE_COMMAND}" -S "${SOURCE_DIR}" -B "${WORK_DIR}/build" -G "${GENERATOR}"
    "-DCMAKE_CXX_COMPILER=${CXX}" "-DCMAKE_BUILD_TYPE=${BUILD_TYPE}"
    "-DCMAKE_PREFIX_PATH=${prefix}" "-DMEMPLAN_PREFIX=${prefix}"
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
    "-DCMAKE_CXX_FLAGS=${flags}" "-DCMAKE_EXE_LINKER_FLAGS=${flags}")
run("${CMAKE_COMMAND}" --build "${WORK_DIR}/build" --parallel 2)
run("${WORK_DIR}/build/consumer")
message(STATUS "find_package: ${run_output}")

# 4. pkg-config, as a Makefile user would.
find_program(PKG_CONFIG pkg-config REQUIRED)
set(ENV{PKG_CONFIG_PATH} "${prefix}/${LIBDIR}/pkgconfig")
run("${PKG_CONFIG}" --modversion memplan)
string(STRIP "${run_output}" pc_version)
if(NOT pc_version STREQUAL VERSION)
  message(FATAL_ERROR "install test: pkg-config says ${pc_version}, expected ${VERSION}")
endif()
run("${PKG_CONFIG}" --cflags --libs --static memplan)
separate_arguments(pc_flags UNIX_COMMAND "${run_output}")
separate_arguments(san_flags UNIX_COMMAND "${flags}")
run("${CXX}" -std=c++20 ${san_flags} "${SOURCE_DIR}/main.cpp" -o "${WORK_DIR}/pc-consumer"
    ${pc_flags})
run("${WORK_DIR}/pc-consumer")
message(STATUS "pkg-config: ${run_output}")

# 5. The installed CLI.
run("${prefix}/${BINDIR}/memplan" plan "${EXAMPLE}" -q -o "${WORK_DIR}/plan.json")
run("${prefix}/${BINDIR}/memplan" verify "${EXAMPLE}" "${WORK_DIR}/plan.json")
message(STATUS "installed CLI planned and verified ${EXAMPLE}")
