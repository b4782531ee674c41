/* Fault-tolerant saturating bin increments (see safe_access.h).
 * ASYNC-SIGNAL-SAFE. Leaf routines: they push nothing, so a fault anywhere
 * between profil_safe_access_begin and _end can resume at
 * profil_safe_access_fault, whose `ret` returns -1 to the caller. */
        .text
        .globl  profil_safe_access_begin
        .hidden profil_safe_access_begin
        .globl  profil_safe_access_end
        .hidden profil_safe_access_end
        .globl  profil_safe_access_fault
        .hidden profil_safe_access_fault
        .globl  profil_safe_add_u16
        .hidden profil_safe_add_u16
        .globl  profil_safe_add_u32
        .hidden profil_safe_add_u32
        .globl  profil_safe_store_u64
        .hidden profil_safe_store_u64

        .p2align 4
profil_safe_access_begin:

/* int profil_safe_add_u16(uint16_t *bin [rdi], uint32_t weight [esi], uint32_t limit [edx]) */
        .type   profil_safe_add_u16, @function
profil_safe_add_u16:
        movzwl  (%rdi), %eax            /* current value; may fault */
.Lu16_retry:
        movzwl  %ax, %eax
        movl    %eax, %ecx
        addl    %esi, %ecx              /* wanted = current + weight */
        jc      .Lu16_clamp
        cmpl    %edx, %ecx
        jbe     .Lu16_have
.Lu16_clamp:
        movl    %edx, %ecx              /* saturate at limit */
.Lu16_have:
        cmpl    %eax, %ecx
        je      .Lu16_done              /* already at the limit: nothing to write */
        lock cmpxchgw %cx, (%rdi)       /* another thread may have changed it; may fault */
        jne     .Lu16_retry             /* ax holds the value it found */
.Lu16_done:
        xorl    %eax, %eax
        cmpl    %edx, %ecx
        setae   %al                     /* 1: the bin reached the limit */
        ret
        .size   profil_safe_add_u16, .-profil_safe_add_u16

/* int profil_safe_add_u32(uint32_t *bin [rdi], uint32_t weight [esi], uint32_t limit [edx]) */
        .type   profil_safe_add_u32, @function
profil_safe_add_u32:
        movl    (%rdi), %eax
.Lu32_retry:
        movl    %eax, %ecx
        addl    %esi, %ecx
        jc      .Lu32_clamp
        cmpl    %edx, %ecx
        jbe     .Lu32_have
.Lu32_clamp:
        movl    %edx, %ecx
.Lu32_have:
        cmpl    %eax, %ecx
        je      .Lu32_done
        lock cmpxchgl %ecx, (%rdi)
        jne     .Lu32_retry
.Lu32_done:
        xorl    %eax, %eax
        cmpl    %edx, %ecx
        setae   %al
        ret
        .size   profil_safe_add_u32, .-profil_safe_add_u32

/* int profil_safe_store_u64(uint64_t *slot [rdi], uint64_t value [rsi]) */
        .type   profil_safe_store_u64, @function
profil_safe_store_u64:
        movq    %rsi, (%rdi)
        xorl    %eax, %eax
        ret
        .size   profil_safe_store_u64, .-profil_safe_store_u64

profil_safe_access_end:

/* Landing pad: the fault guard resumes here after a fault in the code above. */
        .type   profil_safe_access_fault, @function
profil_safe_access_fault:
        movl    $-1, %eax
        ret
        .size   profil_safe_access_fault, .-profil_safe_access_fault

        .section .note.GNU-stack,"",@progbits
