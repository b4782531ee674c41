/* mcount and __fentry__ for `gcc -pg` on x86-64 (see pg_runtime.cc).
 * ASYNC-SIGNAL-SAFE: they save every argument register, call the lock-free
 * arc recorder and restore. With -pg, mcount is called after the prologue
 * (frame pointer set): the caller's return address is 8(%rbp), ours is on
 * the stack. With -mfentry, __fentry__ is called before the prologue: ours
 * is (%rsp), the caller's 8(%rsp). */
/* Saves the argument registers, calls the recorder with frompc (from the
 * given operand) and selfpc (the return address above the 7 saved
 * registers), restores. 7 pushes leave the stack 16-byte aligned. */
        .macro  RECORD_ARC frompc
        pushq   %rax
        pushq   %rcx
        pushq   %rdx
        pushq   %rsi
        pushq   %rdi
        pushq   %r8
        pushq   %r9
        movq    56(%rsp), %rsi
        movq    \frompc, %rdi
        call    profil_pg_record_arc
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
        RECORD_ARC 8(%rbp)      /* frompc: where the callee returns, in its caller */
        .size   mcount, .-mcount
        .size   _mcount, .-_mcount

        .globl  __fentry__
        .type   __fentry__, @function
        .p2align 4
__fentry__:
        RECORD_ARC 64(%rsp)     /* frompc: above our return address */
        .size   __fentry__, .-__fentry__

        .section .note.GNU-stack,"",@progbits
