# cmake -P script behind the ctest package_readme_example (tests/package/CMakeLists.txt passes the
# -D variables used below). What a new user does with the README:
#   1. cmake --install the build into a fresh prefix (WORK_DIR/prefix);
#   2. a fresh project (WORK_DIR/project) whose main.cpp is the README's ```cpp block under
#      "## A C++ example" and whose CMakeLists.txt is its ```cmake block under "## Linking against
#      the library", both copied verbatim at test time (README and test cannot drift);
#   3. configure it with only -DCMAKE_PREFIX_PATH=<prefix> (and this build's compiler, generator and
#      compiler launcher): no C++ standard, include path or library named outside the README's block;
#   4. build it and run it: it exits 0 and prints y[0] = 0.5 * 2 * 1000 + 1 = 1001 and the debugprint.
cmake_minimum_required(VERSION 3.25)

foreach(var README HYPATIA_BUILD_DIR WORK_DIR GENERATOR CXX_COMPILER)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "readme_example.cmake: -D${var}=... is required")
  endif()
endforeach()

# The fenced block of language `lang` in the README section whose heading starts with `heading`
# (the first such block before the next "## " heading), with its final newline.
function(readme_block content heading lang out)
  string(FIND "${content}" "\n${heading}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "README.md has no section \"${heading}\"")
  endif()
  math(EXPR at "${at} + 1")
  string(SUBSTRING "${content}" ${at} -1 section)
  # The section ends at the next "## " heading.
  string(LENGTH "${heading}" hlen)
  string(SUBSTRING "${section}" ${hlen} -1 after_heading)
  string(FIND "${after_heading}" "\n## " end)
  if(NOT end EQUAL -1)
    math(EXPR end "${end} + ${hlen}")
    string(SUBSTRING "${section}" 0 ${end} section)
  endif()
  set(fence "\n```${lang}\n")
  string(FIND "${section}" "${fence}" start)
  if(start EQUAL -1)
    message(FATAL_ERROR "README.md section \"${heading}\" has no ```${lang} block")
  endif()
  string(LENGTH "${fence}" flen)
  math(EXPR start "${start} + ${flen}")
  string(SUBSTRING "${section}" ${start} -1 block)
  string(FIND "${block}" "\n```" stop)
  if(stop EQUAL -1)
    message(FATAL_ERROR "README.md section \"${heading}\": unterminated ```${lang} block")
  endif()
  math(EXPR stop "${stop} + 1")
  string(SUBSTRING "${block}" 0 ${stop} block)
  set(${out} "${block}" PARENT_SCOPE)
endfunction()

# Runs a command; on failure prints its output and stops the test.
function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message("${out}")  # unwrapped, unlike FATAL_ERROR's text
    message(FATAL_ERROR "${what} failed (${rc}); its output is above")
  endif()
  message(STATUS "${what}: ok")
endfunction()

file(READ "${README}" readme)
readme_block("${readme}" "## A C++ example" "cpp" main_cpp)
readme_block("${readme}" "## Linking against the library" "cmake" project_cmake)
string(REGEX MATCH "add_executable\\(([A-Za-z0-9_]+)" _ "${project_cmake}")
set(app "${CMAKE_MATCH_1}")
if(app STREQUAL "")
  message(FATAL_ERROR "README.md's CMakeLists.txt block has no add_executable(<name> ...)")
endif()

set(prefix "${WORK_DIR}/prefix")
set(src "${WORK_DIR}/project")
set(bin "${WORK_DIR}/project-build")
file(REMOVE_RECURSE "${WORK_DIR}")
file(WRITE "${src}/main.cpp" "${main_cpp}")
file(WRITE "${src}/CMakeLists.txt" "${project_cmake}")

set(install_cmd "${CMAKE_COMMAND}" --install "${HYPATIA_BUILD_DIR}" --prefix "${prefix}")
if(CONFIG)
  list(APPEND install_cmd --config "${CONFIG}")
endif()
run("install into ${prefix}" ${install_cmd})

set(configure_cmd "${CMAKE_COMMAND}" -S "${src}" -B "${bin}" -G "${GENERATOR}"
    "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}" "-DCMAKE_PREFIX_PATH=${prefix}"
    # Only the prefix just installed: not a package registered or installed elsewhere.
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
if(MAKE_PROGRAM)
  list(APPEND configure_cmd "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}")
endif()
if(CXX_COMPILER_LAUNCHER)
  list(APPEND configure_cmd "-DCMAKE_CXX_COMPILER_LAUNCHER=${CXX_COMPILER_LAUNCHER}")
endif()
run("configure the README's project" ${configure_cmd})

file(STRINGS "${bin}/CMakeCache.txt" found_dir REGEX "^hypatia_DIR:")
string(REGEX REPLACE "^hypatia_DIR:[A-Z]+=" "" found_dir "${found_dir}")
string(FIND "${found_dir}" "${prefix}/" at)
if(NOT at EQUAL 0)
  message(FATAL_ERROR "find_package(hypatia) found ${found_dir}, not the package in ${prefix}")
endif()

run("build the README's example" "${CMAKE_COMMAND}" --build "${bin}")

set(exe "${bin}/${app}")
if(NOT EXISTS "${exe}" AND CONFIG)
  set(exe "${bin}/${CONFIG}/${app}")  # multi-config generators
endif()
execute_process(COMMAND "${exe}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message("${out}${err}")
  message(FATAL_ERROR "${exe} failed (${rc}); its output is above")
endif()
string(FIND "${out}" "1001.000000\n" at)
string(FIND "${out}" "[id A]" dbg)
if(NOT at EQUAL 0 OR dbg EQUAL -1)
  message("${out}${err}")
  message(FATAL_ERROR "${exe} printed the output above; want y[0] = 1001.000000, then the debugprint")
endif()
message(STATUS "${app} ran and printed:\n${out}")
