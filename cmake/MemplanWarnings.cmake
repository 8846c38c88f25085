# memplan_warnings(target...): the warning flags of memplan's own targets,
# set per target so a project embedding memplan keeps its own. With
# MEMPLAN_WERROR (CI) warnings are errors.
function(memplan_warnings)
  foreach(target IN LISTS ARGN)
    target_compile_options(${target} PRIVATE
      -Wall -Wextra
      # Designated initializers leave the members they omit at their
      # defaults by design (AlgorithmInfo{.name = ..., .selects = true}).
      -Wno-missing-field-initializers
      # GCC 12 reports std::string's own memcpy when inlining operator+ with
      # a short literal (GCC bug 105329); fixed in GCC 13.
      $<$<AND:$<CXX_COMPILER_ID:GNU>,$<VERSION_LESS:$<CXX_COMPILER_VERSION>,13>>:-Wno-restrict>)
    # GCC's flow warnings are unreliable on sanitizer-instrumented code
    # (-Wmaybe-uninitialized inside <regex>'s std::function at -O2 with
    # -fsanitize=address): there they stay warnings. The plain GCC build and
    # the clang fuzz build still treat every warning as an error.
    set(werror ${MEMPLAN_WERROR})
    if(MEMPLAN_SANITIZE AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
      set(werror OFF)
    endif()
    set_target_properties(${target} PROPERTIES COMPILE_WARNING_AS_ERROR ${werror})
  endforeach()
endfunction()
