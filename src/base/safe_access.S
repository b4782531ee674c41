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
        .globl  profil_safe_load_u64
        .hidden profil_safe_load_u64

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

/* int profil_safe_load_u64(const uint64_t *from [rdi], uint64_t *value [rsi])
 * The unwinder's only way to read a stack or code it does not own
 * (src/unwind/memory.h): *value is written only when the load succeeded. */
        .type   profil_safe_load_u64, @function
profil_safe_load_u64:
        movq    (%rdi), %rax            /* may fault */
        movq    %rax, (%rsi)
        xorl    %eax, %eax
        ret
        .size   profil_safe_load_u64, .-profil_safe_load_u64

profil_safe_access_end:

/* Landing pad: the fault guard resumes here after a fault in the code above. */
        .type   profil_safe_access_fault, @function
profil_safe_access_fault:
        movl    $-1, %eax
        ret
        .size   profil_safe_access_fault, .-profil_safe_access_fault

/* The histogram's fast path (sinks.cc): deliver() jumps here as its last
 * act, so nothing of its own is live and it saves no registers. On a fault
 * the landing pad below passes the table and the weight, still in their
 * argument registers, to profil_histogram_fault, which returns to
 * deliver()'s caller. Nothing is returned: the fast path has no limit to
 * report (its bins saturate). weight is at most 1000001 (timer_sample_weight, sampler/cpu_timer_engine.h),
 * so a 16-bit bin plus weight never wraps 32 bits.
 *
 * void profil_safe_count_u16(uint16_t *bin [rdi], uint32_t weight [esi], void *table [rdx])
 * void profil_safe_count_u32(uint32_t *bin [rdi], uint32_t weight [esi], void *table [rdx]) */
        .text
        .globl  profil_safe_count_begin
        .hidden profil_safe_count_begin
        .globl  profil_safe_count_end
        .hidden profil_safe_count_end
        .globl  profil_safe_count_fault
        .hidden profil_safe_count_fault
        .globl  profil_safe_count_u16
        .hidden profil_safe_count_u16
        .globl  profil_safe_count_u32
        .hidden profil_safe_count_u32
        .hidden profil_histogram_fault

        .p2align 4
profil_safe_count_begin:

        .type   profil_safe_count_u16, @function
profil_safe_count_u16:
        movzwl  (%rdi), %eax            /* may fault */
.Lc16_retry:
        leal    (%rax,%rsi), %ecx       /* wanted = current + weight */
        cmpl    $0xffff, %ecx
        jbe     .Lc16_store
        movl    $0xffff, %ecx           /* saturate */
        cmpl    %ecx, %eax
        je      .Lc16_done              /* already full: nothing to write */
.Lc16_store:
        lock cmpxchgw %cx, (%rdi)       /* may fault */
        jne     .Lc16_changed
.Lc16_done:
        ret
.Lc16_changed:
        movzwl  %ax, %eax               /* another thread's value */
        jmp     .Lc16_retry
        .size   profil_safe_count_u16, .-profil_safe_count_u16

        .type   profil_safe_count_u32, @function
profil_safe_count_u32:
        movl    %esi, %esi              /* the upper half of rsi is not ours to trust */
        movl    (%rdi), %eax            /* may fault; zero-extends into rax */
        movl    $0xffffffff, %r8d
.Lc32_retry:
        leaq    (%rax,%rsi), %rcx
        cmpq    %r8, %rcx
        jbe     .Lc32_store
        movq    %r8, %rcx
        cmpl    %ecx, %eax
        je      .Lc32_done
.Lc32_store:
        lock cmpxchgl %ecx, (%rdi)      /* may fault */
        jne     .Lc32_retry             /* eax (so rax) holds the value found */
.Lc32_done:
        ret
        .size   profil_safe_count_u32, .-profil_safe_count_u32

profil_safe_count_end:

/* Landing pad for the two above: profil_histogram_fault(table, weight). */
        .type   profil_safe_count_fault, @function
profil_safe_count_fault:
        movq    %rdx, %rdi
        jmp     profil_histogram_fault
        .size   profil_safe_count_fault, .-profil_safe_count_fault

        .section .note.GNU-stack,"",@progbits
