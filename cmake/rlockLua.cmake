# The Lua scripts of src/lua/, assembled into C at build time by
# cmake/rlockLuaGen.cmake (src/lua/README.md says how).
#
#   rl_lua_scripts(<target> <source root> <output dir>)
#
# makes the custom target <target>, which writes <output dir>/rl_scripts_lua.h
# (included by src/scripts.c) and <output dir>/<name>.lua, each script's text
# as Redis receives it (what luacheck lints). The caller makes every target
# that compiles src/scripts.c depend on <target> and puts <output dir> on its
# include path. Editing a .lua file, the generator or a header of src/
# (where the constants the scripts name are defined) reruns it; a file
# added to src/lua/ is seen at the next build (CONFIGURE_DEPENDS).
function(rl_lua_scripts target root out)
  file(GLOB scripts CONFIGURE_DEPENDS ${root}/src/lua/*.lua)
  file(GLOB libs CONFIGURE_DEPENDS ${root}/src/lua/lib/*.lua)
  file(GLOB headers CONFIGURE_DEPENDS ${root}/src/*.h)
  set(outputs ${out}/rl_scripts_lua.h)
  foreach(s ${scripts})
    get_filename_component(name ${s} NAME)
    list(APPEND outputs ${out}/${name})
  endforeach()
  add_custom_command(OUTPUT ${outputs}
    COMMAND ${CMAKE_COMMAND} -DRL_ROOT=${root} -DRL_OUT=${out}
      -P ${root}/cmake/rlockLuaGen.cmake
    DEPENDS ${scripts} ${libs} ${headers} ${root}/cmake/rlockLuaGen.cmake
    COMMENT "Assembling the Lua scripts of src/lua/"
    VERBATIM)
  add_custom_target(${target} DEPENDS ${outputs})
endfunction()
