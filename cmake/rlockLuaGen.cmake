# Assembles the Lua scripts of src/lua/ into C. Run by the build (see
# cmake/rlockLua.cmake), never by hand:
#
#   cmake -DRL_ROOT=<source tree> -DRL_OUT=<dir> -P cmake/rlockLuaGen.cmake
#
# Every src/lua/<name>.lua is a script. Its text, with each line
# `--@include "lib/x.lua"` replaced by that file's text (expanded the same
# way; a file already in the script is left out) and each @RL__NAME@
# replaced by the integer that `#define RL__NAME <n>` gives in a header of
# src/, is what Redis receives. Writes <RL_OUT>/<name>.lua (that text, for
# luacheck and for the line numbers of Redis's error messages) and
# <RL_OUT>/rl_scripts_lua.h, one `static const char <name>_src[]` per script
# for src/scripts.c.
cmake_minimum_required(VERSION 3.13)

foreach(_v RL_ROOT RL_OUT)
  if(NOT DEFINED ${_v})
    message(FATAL_ERROR "rlockLuaGen.cmake: -D${_v}=... is required")
  endif()
endforeach()
set(_lua ${RL_ROOT}/src/lua)

# The text of `path` (relative to src/lua/) with its includes expanded,
# into the variable `out`. The files already expanded in this script are
# in the global property RL_LUA_SEEN. Strings are kept quoted throughout:
# Lua's ';' and '[' must never meet CMake's list handling.
function(rl_lua_expand path out)
  set(file ${_lua}/${path})
  if(NOT EXISTS ${file})
    message(FATAL_ERROR "src/lua/${path}: no such file")
  endif()
  file(READ ${file} text)
  if(text MATCHES "\r")
    message(FATAL_ERROR "src/lua/${path}: carriage return (the files are LF only)")
  endif()
  if(NOT text MATCHES "\n$")
    message(FATAL_ERROR "src/lua/${path}: no newline at the end")
  endif()
  set(done "")
  while(TRUE)
    string(FIND "${text}" "\n--@" at)
    if(text MATCHES "^--@")
      set(at -1)
    elseif(at EQUAL -1)
      break()
    endif()
    math(EXPR at "${at} + 1")
    string(SUBSTRING "${text}" 0 ${at} before)
    string(SUBSTRING "${text}" ${at} -1 text)
    string(FIND "${text}" "\n" eol)
    string(SUBSTRING "${text}" 0 ${eol} line)
    math(EXPR eol "${eol} + 1")
    string(SUBSTRING "${text}" ${eol} -1 text)
    string(APPEND done "${before}")
    if(NOT line MATCHES "^--@include \"([a-z0-9_/]+\\.lua)\"[ \t]*$")
      message(FATAL_ERROR "src/lua/${path}: not a directive this build knows: ${line}")
    endif()
    set(sub ${CMAKE_MATCH_1})
    get_property(seen GLOBAL PROPERTY RL_LUA_SEEN)
    if(NOT sub IN_LIST seen)
      set_property(GLOBAL APPEND PROPERTY RL_LUA_SEEN ${sub})
      rl_lua_expand(${sub} inner)
      string(APPEND done "${inner}")
    endif()
  endwhile()
  string(APPEND done "${text}")
  set(${out} "${done}" PARENT_SCOPE)
endfunction()

# The constants the scripts name, from the headers of src/: one
# `#define RL__NAME <integer>` each, found once. (Read whole and matched,
# never split into lines: a header's ';' and '[' must not meet lists.)
file(GLOB _headers ${RL_ROOT}/src/*.h)
set(_defines "")
foreach(_h ${_headers})
  file(READ ${_h} _t)
  string(REGEX MATCHALL "#define RL__[A-Z0-9_]+[ \t]+[0-9]+[ \t]*(\n|/[*/])" _m "${_t}")
  list(APPEND _defines ${_m})
endforeach()

function(rl_lua_constants name text out)
  string(REGEX MATCHALL "@RL__[A-Z0-9_]+@" used "${text}")
  if(used)
    list(REMOVE_DUPLICATES used)
  endif()
  foreach(at_name ${used})
    string(REPLACE "@" "" c ${at_name})
    set(value "")
    foreach(d ${_defines})
      if(d MATCHES "^#define ${c}[ \t]+([0-9]+)")
        if(NOT value STREQUAL "")
          message(FATAL_ERROR "src/lua/${name}: ${c} is defined twice in src/*.h")
        endif()
        set(value ${CMAKE_MATCH_1})
      endif()
    endforeach()
    if(value STREQUAL "")
      message(FATAL_ERROR "src/lua/${name}: ${at_name}: no `#define ${c} <integer>` in src/*.h")
    endif()
    string(REPLACE "${at_name}" "${value}" text "${text}")
  endforeach()
  if(text MATCHES "@RL__")
    message(FATAL_ERROR "src/lua/${name}: a stray @RL__ (write @RL__NAME@)")
  endif()
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

file(GLOB _scripts RELATIVE ${_lua} ${_lua}/*.lua)
list(SORT _scripts)
if(NOT _scripts)
  message(FATAL_ERROR "no script in src/lua/")
endif()
set(_c "/* Generated from src/lua/ by cmake/rlockLuaGen.cmake: do not edit.\n")
string(APPEND _c " * One script each, its includes expanded (src/lua/README.md). */\n")
foreach(_s ${_scripts})
  set_property(GLOBAL PROPERTY RL_LUA_SEEN ${_s})
  rl_lua_expand(${_s} _text)
  rl_lua_constants(${_s} "${_text}" _text)
  file(WRITE ${RL_OUT}/${_s} "${_text}")
  # A C string literal, a line of the script per line of C.
  string(REGEX REPLACE "\n$" "" _text "${_text}")
  string(REPLACE "\\" "\\\\" _text "${_text}")
  string(REPLACE "\"" "\\\"" _text "${_text}")
  string(REPLACE "?" "\\?" _text "${_text}")   # no trigraph
  string(REPLACE "\t" "\\t" _text "${_text}")
  string(REPLACE "\n" "\\n\"\n    \"" _text "${_text}")
  string(REGEX REPLACE "\\.lua$" "" _n ${_s})
  string(APPEND _c "\nstatic const char ${_n}_src[] =\n    \"${_text}\\n\";\n")
endforeach()
file(WRITE ${RL_OUT}/rl_scripts_lua.h "${_c}")
