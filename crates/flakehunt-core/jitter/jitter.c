/* flakehunt's jitter library, loaded with LD_PRELOAD by the `jitter` profile.
 *
 * Around pthread_mutex_lock/unlock, pthread_cond_*, sched_yield, read, write and nanosleep it
 * yields or sleeps 1-20 microseconds with probability FLAKEHUNT_JITTER_RATE (1 delays every
 * call), from a seeded per-thread generator (FLAKEHUNT_JITTER_SEED), to multiply the
 * interleavings a run explores without hardware performance counters. With
 * FLAKEHUNT_JITTER_SLEEP_US=MIN-MAX every delay is a sleep of MIN to MAX microseconds instead:
 * a yield may take no time at all, a sleep takes at least its length (resumed after a signal),
 * so a user can rely on a window being widened. Each process appends "loaded PID" when it starts and
 * "delays N" when it exits to FLAKEHUNT_JITTER_REPORT, which flakehunt reads into the attempt's
 * effect. A statically linked program never loads it, and the missing report says so.
 *
 * Built by flakehunt at run time with `cc -shared -fPIC`; no dependency besides libc. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static uint64_t threshold;      /* rate scaled to 2^32 (2^32 = every call); 0 = inert */
static long sleep_min_ns;       /* with FLAKEHUNT_JITTER_SLEEP_US: sleeps only, this long ... */
static long sleep_span_ns;      /* ... plus up to this much */
static uint64_t seed = 0x9e3779b97f4a7c15ULL;
static unsigned long delays;
static volatile int active;
static char report[4096];
static __thread uint64_t state;
static __thread int busy;

static int (*real_mutex_lock)(pthread_mutex_t *);
static int (*real_mutex_unlock)(pthread_mutex_t *);
static int (*real_cond_wait)(pthread_cond_t *, pthread_mutex_t *);
static int (*real_cond_timedwait)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *);
static int (*real_cond_signal)(pthread_cond_t *);
static int (*real_cond_broadcast)(pthread_cond_t *);
static int (*real_sched_yield)(void);
static ssize_t (*real_read)(int, void *, size_t);
static ssize_t (*real_write)(int, const void *, size_t);
static int (*real_nanosleep)(const struct timespec *, struct timespec *);

/* pthread_cond_* have two versions in glibc on x86_64; take the current one, as the program does. */
static void *cond_symbol(const char *name) {
    void *p = dlvsym(RTLD_NEXT, name, "GLIBC_2.3.2");
    return p ? p : dlsym(RTLD_NEXT, name);
}

static void resolve(void) {
    if (real_write) return;
    real_mutex_lock = dlsym(RTLD_NEXT, "pthread_mutex_lock");
    real_mutex_unlock = dlsym(RTLD_NEXT, "pthread_mutex_unlock");
    real_cond_wait = cond_symbol("pthread_cond_wait");
    real_cond_timedwait = cond_symbol("pthread_cond_timedwait");
    real_cond_signal = cond_symbol("pthread_cond_signal");
    real_cond_broadcast = cond_symbol("pthread_cond_broadcast");
    real_sched_yield = dlsym(RTLD_NEXT, "sched_yield");
    real_read = dlsym(RTLD_NEXT, "read");
    real_nanosleep = dlsym(RTLD_NEXT, "nanosleep");
    real_write = dlsym(RTLD_NEXT, "write");
}

static void append_report(const char *line) {
    if (!report[0]) return;
    int fd = (int)syscall(SYS_open, report, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return;
    syscall(SYS_write, fd, line, strlen(line));
    syscall(SYS_close, fd);
}

__attribute__((constructor)) static void jitter_init(void) {
    resolve();
    const char *rate = getenv("FLAKEHUNT_JITTER_RATE");
    const char *s = getenv("FLAKEHUNT_JITTER_SEED");
    const char *r = getenv("FLAKEHUNT_JITTER_REPORT");
    if (s) seed = strtoull(s, NULL, 10) | 1;
    if (r && strlen(r) < sizeof report) strcpy(report, r);
    double p = rate ? atof(rate) : 0.0;
    if (p > 1.0) p = 1.0;
    threshold = p > 0.0 ? (uint64_t)(p * 4294967296.0) : 0;
    const char *range = getenv("FLAKEHUNT_JITTER_SLEEP_US");
    if (range) {
        char *end;
        long lo = strtol(range, &end, 10);
        long hi = *end == '-' ? strtol(end + 1, NULL, 10) : lo;
        if (lo >= 1 && hi >= lo) {
            sleep_min_ns = lo * 1000;
            sleep_span_ns = (hi - lo) * 1000;
        }
    }
    char line[64];
    snprintf(line, sizeof line, "loaded %ld\n", (long)getpid());
    append_report(line);
    active = 1;
}

__attribute__((destructor)) static void jitter_fini(void) {
    active = 0;
    char line[64];
    snprintf(line, sizeof line, "delays %lu\n", __atomic_load_n(&delays, __ATOMIC_RELAXED));
    append_report(line);
}

static uint64_t next(void) {
    if (!state) state = seed ^ ((uint64_t)syscall(SYS_gettid) * 0x2545f4914f6cdd1dULL) ^ 0xd1b54a32d192ed03ULL;
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
}

/* Sleeps at least ns nanoseconds: a signal handler that interrupts the sleep does not shorten it. */
static void sleep_ns(long ns) {
    int saved = errno;
    struct timespec ts = {ns / 1000000000L, ns % 1000000000L};
    while (syscall(SYS_nanosleep, &ts, &ts) == -1 && errno == EINTR) {
    }
    errno = saved;
}

/* Maybe delay the calling thread: half the delays yield, half sleep 1-20 us; with a sleep range,
 * every delay sleeps within it. */
static void jitter(void) {
    if (!active || !threshold || busy) return;
    busy = 1;
    uint64_t x = next();
    if ((uint64_t)(uint32_t)x < threshold) {
        __atomic_fetch_add(&delays, 1, __ATOMIC_RELAXED);
        if (sleep_min_ns) {
            sleep_ns(sleep_min_ns + (long)((x >> 32) % (uint64_t)(sleep_span_ns + 1)));
        } else if ((x >> 32) & 1) {
            int saved = errno;
            syscall(SYS_sched_yield);
            errno = saved;
        } else {
            sleep_ns(1000 + (long)((x >> 33) % 20) * 1000);
        }
    }
    busy = 0;
}

int pthread_mutex_lock(pthread_mutex_t *m) {
    resolve();
    jitter();
    return real_mutex_lock(m);
}

int pthread_mutex_unlock(pthread_mutex_t *m) {
    resolve();
    int rc = real_mutex_unlock(m);
    jitter();
    return rc;
}

int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m) {
    resolve();
    jitter();
    return real_cond_wait(c, m);
}

int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *t) {
    resolve();
    jitter();
    return real_cond_timedwait(c, m, t);
}

int pthread_cond_signal(pthread_cond_t *c) {
    resolve();
    jitter();
    return real_cond_signal(c);
}

int pthread_cond_broadcast(pthread_cond_t *c) {
    resolve();
    jitter();
    return real_cond_broadcast(c);
}

int sched_yield(void) {
    resolve();
    jitter();
    return real_sched_yield();
}

ssize_t read(int fd, void *buf, size_t n) {
    resolve();
    jitter();
    return real_read(fd, buf, n);
}

ssize_t write(int fd, const void *buf, size_t n) {
    resolve();
    jitter();
    return real_write(fd, buf, n);
}

int nanosleep(const struct timespec *req, struct timespec *rem) {
    resolve();
    jitter();
    return real_nanosleep(req, rem);
}
