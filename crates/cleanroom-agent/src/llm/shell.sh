# The built-in agent's bash tool, run as `bash -l shell.sh STATE run|show`.
# Each command runs in a fresh login shell that first restores what the
# previous one left (working directory, variables, functions, aliases), so
# a session feels persistent while every command can be timed out and
# killed on its own. Output goes to a file, not a pipe, so a server started
# in the background does not hold the tool call open.
__cleanroom_state=$1
if [ "$2" = show ]; then
  cat "$__cleanroom_state/out"
  exit 0
fi
if [ -f "$__cleanroom_state/vars" ]; then
  . "$__cleanroom_state/vars" 2>/dev/null
fi
cd "$(cat "$__cleanroom_state/cwd" 2>/dev/null || echo /workspace)" 2>/dev/null || cd /
eval "$(cat "$__cleanroom_state/cmd")" >"$__cleanroom_state/out" 2>&1 </dev/null
__cleanroom_rc=$?
pwd >"$__cleanroom_state/cwd" 2>/dev/null
{
  for __cleanroom_v in $(compgen -v); do
    case "$__cleanroom_v" in
      BASH* | SHELLOPTS | EUID | UID | PPID | GROUPS | FUNCNAME | LINENO | RANDOM | SRANDOM | SECONDS | \
        EPOCHREALTIME | EPOCHSECONDS | HISTCMD | PIPESTATUS | DIRSTACK | COMP_* | PWD | SHLVL | _ | __cleanroom_*)
        continue ;;
    esac
    declare -p "$__cleanroom_v" 2>/dev/null
  done
  declare -f
  alias -p
} >"$__cleanroom_state/vars.new" 2>/dev/null && mv -f "$__cleanroom_state/vars.new" "$__cleanroom_state/vars"
cat "$__cleanroom_state/out"
exit $__cleanroom_rc
