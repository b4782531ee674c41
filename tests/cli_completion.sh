#!/bin/sh
# `profil completion bash` in a real bash (issue 35): tmux runs an
# interactive bash in a pane of its own server, the script is sourced, keys
# are sent (TAB included) and the pane is read back (capture-pane). Nothing
# waits for a time: each step retries until the pane shows what it should,
# for at most 120 s (a loaded machine). Cases:
#   1. `profil ru<TAB>` completes the command: "profil run ";
#   2. an option of a command: `profil diff --per<TAB>` -> --per-second;
#   3. an option's values from its check: `profil report --by thr<TAB>`
#      -> thread;
#   4. TAB TAB after `profil ` lists every command `profil --help` lists;
#   5. after `profil run -- ` the program is a command name: `profil run --
#      profil-compl<TAB>` completes a command on PATH (one made here).
# `profil completion zsh` is checked by zsh -n where zsh is installed.
# usage: cli_completion.sh PROFIL
profil=$(realpath "$1") || exit 1
command -v tmux > /dev/null || { echo "SKIP: tmux is not installed"; exit 77; }
command -v bash > /dev/null || { echo "SKIP: bash is not installed"; exit 77; }
work=$(mktemp -d)
socket=$work/tmux.sock
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
t() { tmux -S "$socket" "$@"; }
trap 't kill-server 2> /dev/null; rm -rf "$work"' EXIT

pane() { t capture-pane -p -t completion > "$work/pane" 2> /dev/null; }
# wait_for WHAT PATTERN: captures the pane until a line matches PATTERN
# (an extended regular expression).
wait_for() {
  i=0
  while [ $i -lt 600 ]; do
    pane
    grep -q -E -- "$2" "$work/pane" && return 0
    sleep 0.2
    i=$((i + 1))
  done
  fail "the pane never showed $1"
  cat "$work/pane"
  return 1
}

"$profil" completion bash > "$work/profil.bash" || fail "profil completion bash failed"
bash -n "$work/profil.bash" || fail "profil completion bash: not a bash script"
# A command of its own on PATH, for case 5.
mkdir "$work/bin"
printf '#!/bin/sh\n' > "$work/bin/profil-completion-probe"
chmod +x "$work/bin/profil-completion-probe"
ln -s "$profil" "$work/bin/profil"
cat > "$work/bashrc" << EOF
PS1='ready> '
PATH=$work/bin:\$PATH
bind 'set bell-style none'
source $work/profil.bash
EOF
t -f /dev/null new-session -d -s completion -x 200 -y 50 "bash --noprofile --rcfile $work/bashrc -i" ||
  { echo "FAIL: tmux could not start"; exit 1; }
wait_for "the prompt" '^ready>$' || exit 1

# try WHAT KEYS LINE: types KEYS, then TAB, then "@" (capture-pane drops
# trailing spaces: "@" shows the space a completed word ends with), waits
# for the line "ready> LINE@", and clears it (C-u) for the next case.
try() {
  what=$1 keys=$2 line=$3
  t send-keys -t completion -l "$keys"
  t send-keys -t completion Tab
  t send-keys -t completion -l "@"
  wait_for "$what" "^ready> $line@\$"
  t send-keys -t completion C-u
  t send-keys -t completion C-l
  wait_for "a clear prompt after $what" '^ready>$'
}

try "the command completed" "profil ru" "profil run "
try "the option completed" "profil diff --per" "profil diff --per-second "
try "the option's value completed" "profil report --by thr" "profil report --by thread "
commands=$("$profil" --help | sed -n '/^Subcommands:/,$p' | sed -n 's/^  \([a-z][a-z-]*\) .*/\1/p')
t send-keys -t completion -l "profil "
t send-keys -t completion Tab Tab
wait_for "the list of commands" "^attach "
for command in $commands; do
  grep -q -E "(^| )$command( |$)" "$work/pane" || fail "TAB TAB does not list $command"
done
t send-keys -t completion C-u
t send-keys -t completion C-l
wait_for "a clear prompt" '^ready>$'
try "the program completed as a command" "profil run -- profil-completion-pr" "profil run -- profil-completion-probe "

if command -v zsh > /dev/null; then
  "$profil" completion zsh > "$work/_profil" || fail "profil completion zsh failed"
  zsh -n "$work/_profil" || fail "profil completion zsh: not a zsh script"
else
  echo "note: zsh is not installed; its script is not checked"
fi
"$profil" completion fish > /dev/null 2>&1 && fail "profil completion fish succeeded"
exit $failures
