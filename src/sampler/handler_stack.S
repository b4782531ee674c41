// profil_call_on_stack(arg, fn, stack_top): calls fn(arg) with the stack
// pointer at stack_top (16-byte aligned), then returns on the caller's
// stack (handler_stack.h). ASYNC-SIGNAL-SAFE: registers only.
// rdi = arg (stays the first argument), rsi = fn, rdx = stack_top.
        .text
        .globl profil_call_on_stack
        .hidden profil_call_on_stack
        .type profil_call_on_stack, @function
profil_call_on_stack:
        .cfi_startproc
        pushq %rbp
        .cfi_def_cfa_offset 16
        .cfi_offset %rbp, -16
        movq %rsp, %rbp
        .cfi_def_cfa_register %rbp
        movq %rdx, %rsp
        andq $-16, %rsp
        call *%rsi
        movq %rbp, %rsp
        popq %rbp
        .cfi_def_cfa %rsp, 8
        ret
        .cfi_endproc
        .size profil_call_on_stack, .-profil_call_on_stack
        .section .note.GNU-stack,"",@progbits
