/*
 * profil — process program-counter sampling for Linux (C API).
 *
 * The one public C header of libprofil. It declares profil(2) with glibc's
 * ABI (so linking -lprofil or preloading libprofil.so replaces glibc's),
 * sprofil() as glibc's <sys/profil.h> declares it, Solaris pcsample(2), the
 * gmon runtime that `gcc -pg` programs call, and the few controls of this
 * implementation.
 *
 * Errors follow the manual pages: -1 and errno. Nothing here prints.
 * See docs/personalities.md for what each personality changes.
 */
#ifndef PROFIL_PROFIL_H
#define PROFIL_PROFIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/cdefs.h> /* __THROW: match glibc's own declarations */
#include <sys/time.h>

#if defined(__has_include)
#if __has_include(<sys/profil.h>)
#include <sys/profil.h> /* struct prof, PROF_USHORT/PROF_UINT/PROF_FAST, sprofil */
#define PROFIL_HAVE_SYS_PROFIL_H 1
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- profil(2), glibc ABI (NetBSD/glibc argument order) ---------------- */

/* Samples the program counter of every thread at each tick of its CPU time
 * into 16-bit bins: bin = [(pc - offset) / 2] * scale / 65536.
 * scale 0 or a NULL buffer turns profiling off. Returns 0, or -1 with errno
 * EINVAL (scale > 65536), EFAULT (buffer not writable), EBUSY (the sampling
 * signal is already handled by the program), EALREADY (openbsd personality,
 * second buffer). */
int profil(unsigned short *buf, size_t bufsiz, size_t offset, unsigned int scale) __THROW;

/* ---- sprofil(), as glibc declares it ------------------------------------ */
#ifndef PROFIL_HAVE_SYS_PROFIL_H
struct prof {
  void *pr_base;             /* buffer base */
  size_t pr_size;            /* buffer size in bytes */
  size_t pr_off;             /* pc offset */
  unsigned long int pr_scale; /* pc scaling (16.16 fixed point) */
};
enum { PROF_USHORT = 0, PROF_UINT = 1 << 0, PROF_FAST = 1 << 1 };
int sprofil(struct prof *profp, int profcnt, struct timeval *tvp, unsigned int flags) __THROW;
#endif

/* ---- pcsample(2), Solaris ------------------------------------------------ */

/* Records one raw program counter per sampling tick into samples[] until it
 * holds nsamples. Returns the number of PCs the previous buffer received
 * (0 on the first call); pcsample(NULL, 0) stops. -1/EINVAL for a negative
 * count, -1/EFAULT for an unwritable array. */
long pcsample(uintptr_t samples[], long nsamples);

/* ---- The gmon runtime that `gcc -pg` programs call ---------------------
 * Declared as glibc's <sys/gmon.h> declares them; a -pg program linked with
 * -lprofil gets these (and mcount/__fentry__) instead of glibc's.
 * See docs/gmon-runtime.md. */
void __monstartup(unsigned long lowpc, unsigned long highpc) __THROW;
void monstartup(unsigned long lowpc, unsigned long highpc) __THROW;
void moncontrol(int mode) __THROW;
void _mcleanup(void) __THROW;

/* OpenBSD 2025 profil(2): buf holds a struct gmonhdr, samplesize bytes of
 * 16-bit bins and room for the arcs; at exit gmon.<progname>.<pid>.out is
 * written into dirfd's directory (-1: $PROFDIR, else the current directory
 * at the first call). -1 with errno EINVAL (scale > 65536, buffer too
 * small), EALREADY (another buffer), EBADF / ENOTDIR (dirfd), EFAULT. */
int profil_openbsd(void *buf, size_t buflen, size_t samplesize, unsigned long offset, unsigned int scale,
                   int dirfd);

/* ---- Personalities -------------------------------------------------------- */
typedef enum profil_personality {
  PROFIL_PERSONALITY_BSD = 0,     /* NetBSD, glibc: the default */
  PROFIL_PERSONALITY_SOLARIS = 1, /* OmniOS / illumos */
  PROFIL_PERSONALITY_OSF1 = 2,    /* OSF/1, Tru64 */
  PROFIL_PERSONALITY_OPENBSD = 3  /* OpenBSD 2025 */
} profil_personality;

/* Selects whose semantics profil() follows; also PROFIL_PERSONALITY=bsd|
 * solaris|osf1|openbsd in the environment. Returns 0, or -1/EINVAL. */
int profil_set_personality(profil_personality personality);
profil_personality profil_get_personality(void);
/* Parses "bsd", "solaris", "osf1", "openbsd"; -1 for anything else. */
int profil_personality_from_name(const char *name);

/* ---- Sampling clock --------------------------------------------------------- */
typedef enum profil_clock {
  PROFIL_CLOCK_CPU = 0,  /* per-thread POSIX CPU-time timers (default) */
  PROFIL_CLOCK_PERF = 1, /* perf_event_open task-clock, high resolution:
                            samples written by the kernel into ring buffers,
                            every thread whatever its signal mask; falls back
                            to PROFIL_CLOCK_PERF_SIGNAL where no ring can be
                            mapped */
  PROFIL_CLOCK_AUTO = 2, /* perf where the kernel allows, else cpu */
  PROFIL_CLOCK_WALL = 3, /* cpu, plus sleeping (blocked) threads sampled
                            from /proc without a signal (docs/sampler.md) */
  PROFIL_CLOCK_PERF_SIGNAL = 4 /* task-clock, one signal per sample into the
                                  sampled thread (threads that block signals
                                  are not sampled) */
} profil_clock;

/* Sets the sampling rate and clock used from the next time sampling starts
 * (defaults: PROFIL_HZ or 100, PROFIL_CLOCK or cpu). -1/EINVAL for hz outside
 * 1..100000 or an unknown clock. */
int profil_set_clock(profil_clock clock, unsigned int hz);
/* The rate samples are really counted at (each sample is weighted so counts
 * are in units of 1/hz CPU seconds), and the clock that runs. */
unsigned int profil_sampling_hz(void);
profil_clock profil_active_clock(void);
/* Why the perf clock was not used, or NULL. */
const char *profil_clock_fallback_reason(void);

/* Statistics since the process started: signals handled, weighted ticks,
 * and samples lost (bad buffer, full tables). */
typedef struct profil_stats {
  uint64_t signals;
  uint64_t ticks;
  uint64_t dropped;
  uint64_t buffer_faults;
} profil_stats;
void profil_get_stats(profil_stats *out);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PROFIL_PROFIL_H */
