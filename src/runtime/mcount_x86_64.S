/* mcount / _mcount and __fentry__ for `gcc -pg` on x86-64: they hand
 * (frompc, selfpc) to profil_gmon_record_arc (gmon_runtime.cc) and return
 * with every register a call may still need intact.
 *
 * ASYNC-SIGNAL-SAFE: no state of their own; the recorder is wait-free.
 *
 * Where the PCs are (GCC's x86-64 FUNCTION_PROFILER, glibc
 * sysdeps/x86_64/_mcount.S):
 *   -pg:          `call mcount` after the prologue, frame pointer set:
 *                 selfpc = our return address, frompc = 8(%rbp) (the
 *                 instrumented function's own return address in its caller);
 *   -pg -mfentry: `call __fentry__` before the prologue: selfpc = our
 *                 return address, frompc = the next word up.
 * Saved: the integer argument registers (rdi, rsi, rdx, rcx, r8, r9), rax
 * (the vector-register count of a varargs call), r10 (the static chain of a
 * nested function) and r11. The vector registers are not touched: the
 * recorder is compiled for general registers only.
 * Alignment: the C call needs %rsp % 16 == 0. mcount is entered with
 * %rsp % 16 == 8 (the prologue pushed %rbp), __fentry__ with 0 (called at
 * function entry): 9 pushes (72 bytes) align the first; the second needs
 * 8 bytes more. No unwind information: nothing unwinds through here
 * (the recorder neither throws nor faults). */

        .macro  SAVE_AND_RECORD frompc, pad
        pushq   %rax
        pushq   %rcx
        pushq   %rdx
        pushq   %rsi
        pushq   %rdi
        pushq   %r8
        pushq   %r9
        pushq   %r10
        pushq   %r11
        .if \pad
        subq    $8, %rsp
        .endif
        movq    72+\pad(%rsp), %rsi     /* selfpc: our return address */
        movq    \frompc, %rdi
        call    profil_gmon_record_arc
        .if \pad
        addq    $8, %rsp
        .endif
        popq    %r11
        popq    %r10
        popq    %r9
        popq    %r8
        popq    %rdi
        popq    %rsi
        popq    %rdx
        popq    %rcx
        popq    %rax
        ret
        .endm

        .text
        .globl  mcount
        .type   mcount, @function
        .globl  _mcount
        .type   _mcount, @function
        .p2align 4
mcount:
_mcount:
        SAVE_AND_RECORD 8(%rbp), 0
        .size   mcount, .-mcount
        .size   _mcount, .-_mcount

        .globl  __fentry__
        .type   __fentry__, @function
        .p2align 4
__fentry__:
        SAVE_AND_RECORD 80+8(%rsp), 8   /* above 9 saves, the pad and selfpc */
        .size   __fentry__, .-__fentry__

        .section .note.GNU-stack,"",@progbits
