-- luacheck's settings for rlock's scripts. It lints the scripts as Redis
-- receives them, their includes expanded (<build>/lua/*.lua; README.md):
--   luacheck --config src/lua/.luacheckrc build/lua
-- A file of src/lua/ alone would name functions it includes from lib/.

-- Redis runs Lua 5.1, with its own globals, read-only (a script may not
-- set one).
std = 'lua51'
read_globals = { 'redis', 'KEYS', 'ARGV', 'cjson', 'cmsgpack', 'bit', 'struct' }

-- An empty branch is how these scripts say "nothing to do in this case"
-- ahead of the cases that do something (rw_acquire.lua, lib/rw_scan.lua).
ignore = { '542' }
