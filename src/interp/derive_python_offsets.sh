#!/bin/bash
# Prints the field offsets python_layout.cc's tables hold, from the DWARF of
# a CPython build with debug information (pyenv's shared libpython):
#   derive_python_offsets.sh /root/.pyenv/versions/3.9.18/lib/libpython3.9.so.1.0 3.9
# A new minor version's table starts here: run it, then compare the
# structs' definitions for fields whose meaning changed.
lib=$1; v=$2
e=()
o(){ e+=(-ex "printf \"$1.$2 %d\\n\", (long)&(($1*)0)->$2"); }
s(){ e+=(-ex "printf \"sizeof $1 %d\\n\", sizeof($1)"); }
o PyThreadState next; o PyThreadState interp; o PyThreadState thread_id
o PyInterpreterState next
case $v in 2.7|3.6) ;; *) o _PyRuntimeState interpreters.head;; esac
case $v in 2.7|3.[6-9]|3.10) o PyThreadState frame; o PyInterpreterState tstate_head; o PyFrameObject f_back; o PyFrameObject f_code; o PyFrameObject f_lasti;;
  *) o PyThreadState native_thread_id; o PyInterpreterState threads.head; o "struct _PyInterpreterFrame" previous; o "struct _PyInterpreterFrame" owner;;
esac
case $v in 3.11) o PyThreadState cframe; o _PyCFrame current_frame; o "struct _PyInterpreterFrame" f_code; o "struct _PyInterpreterFrame" prev_instr; o "struct _PyInterpreterFrame" is_entry;;
  3.12) o PyThreadState cframe; o _PyCFrame current_frame; o "struct _PyInterpreterFrame" f_code; o "struct _PyInterpreterFrame" prev_instr;;
  3.13) o PyThreadState current_frame; o "struct _PyInterpreterFrame" f_executable; o "struct _PyInterpreterFrame" instr_ptr;;
esac
o PyCodeObject co_filename; o PyCodeObject co_name; o PyCodeObject co_firstlineno
case $v in 2.7|3.[6-9]) o PyCodeObject co_lnotab;; *) o PyCodeObject co_linetable;; esac
case $v in 3.1[1-9]) o PyCodeObject co_qualname; o PyCodeObject co_code_adaptive; s PyCodeObject;; esac
case $v in 2.7) o PyStringObject ob_size; o PyStringObject ob_sval;; *) s PyASCIIObject; s PyCompactUnicodeObject; o PyASCIIObject length; o PyASCIIObject state; o PyBytesObject ob_size; o PyBytesObject ob_sval;; esac
# The GIL's holder (python_gil.h; 2.7 and 3.6 read the symbol _PyThreadState_Current).
case $v in 3.[7-9]|3.1[01]) o _PyRuntimeState gilstate.tstate_current;;
  3.1[2-9]) o PyInterpreterState ceval.gil; o "struct _gil_runtime_state" last_holder; o "struct _gil_runtime_state" locked;;
esac
o PyObject ob_type
gdb -batch -nx "${e[@]}" "$lib" 2>&1
