#!/usr/bin/env bash
# Programs given words that an option parser could take for its own: an
# empty string, `--`, `-o x`, `--hz 7`, brackets, spaces, non-UTF-8 bytes.
# profil run must hand them over byte for byte, with `--` before the
# program (never forwarded) and without it (profil's options end at the
# program's name).
source "$(dirname "$0")/../lib.sh"
need /bin/echo /usr/bin/printf sh
words=('' -- -o x --hz 7 '[1,2,3]' 'a b' $'\xff\xfe' -- '-')
compare echo -- /bin/echo "${words[@]}"
compare printf -- /usr/bin/printf '<%s>\n' "${words[@]}"
compare sh_c -- sh -c 'printf "<%s>\n" "$0" "$@"; exit 3' "${words[@]}"
compare echo_no_dashdash --no-dashdash /bin/echo "${words[@]}"
compare printf_no_dashdash --no-dashdash /usr/bin/printf '<%s>\n' -o x "${words[@]}"
compare sh_c_no_dashdash --no-dashdash sh -c 'printf "<%s>\n" "$0" "$@"; exit 3' "${words[@]}"
finish
