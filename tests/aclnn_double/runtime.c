/*
 * TEST DOUBLE -- libascendcl.so stand-in: aclInit/aclFinalize(Reference), devices, contexts,
 * streams, "device" memory (host malloc), aclrtMemcpy, aclGetRecentErrMsg, plus the live-object
 * counters that the tests read through aclnnTestDoubleCounter(). Not the real CANN runtime.
 *
 * What it models of the real one (hicann/runtime acl.cpp and its docs), because the adapter
 * depends on it: aclInit counts references and answers 100002 to a repeat; aclFinalize clears
 * the count whoever holds references, aclFinalizeReference gives one back; the current device
 * (context) belongs to the calling thread; a device fault is reported by the next stream sync
 * and leaves the device unusable until it is reset; the state a fork()ed child inherits is dead.
 */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "aclnn_double.h"

typedef struct Alloc {
    char *ptr;
    size_t size;
    int device;
    struct Alloc *next;
} Alloc;

typedef struct Ctx {
    int magic;
    int device;
    unsigned gen; /* ACL generation it was made in: a finalize kills it */
} Ctx;

typedef struct Stream {
    int magic;
    int device;
    unsigned gen;
    int saturate; /* overflow mode at creation */
    int pending;  /* 0, or the error the next sync reports (an injected fault or hang) */
    int64_t busy_until; /* CLOCK_MONOTONIC ns at which the work launched so far is done */
} Stream;

typedef struct Event {
    int magic;
    unsigned gen;
    int recorded;
    int64_t at; /* CLOCK_MONOTONIC ns at which the stream reaches it */
} Event;

#define CTX_MAGIC 0x43545854
#define STREAM_MAGIC 0x5354524d
#define EVENT_MAGIC 0x45564e54

static int64_t counters[C_COUNT];
static const char *counter_names[C_COUNT] = {
    "allocs_live", "tensors_live", "scalars_live", "executors_live", "streams_live", "inits",
    "finalizes", "workspace_runs", "phase1_calls", "phase2_calls", "memcpy_h2d", "memcpy_d2h",
    "errmsg_calls", "last_sync_timeout_ms", "last_tensor_format", "executors_destroyed",
    "events_live", "arrays_live"};
static Alloc *allocs;
static uint64_t refcount; /* aclInit references */
static pid_t init_pid;    /* the process that initialised */
static unsigned generation = 1;
static Ctx contexts[N_DEVICES]; /* each device's default context, shared by threads */
static int device_refs[N_DEVICES];
static int device_broken[N_DEVICES];
static int device_started[N_DEVICES];
static int sat_mode[N_DEVICES];
static int64_t malloc_fail_in; /* aclnnTestDoubleInject("malloc_fail_in", n) */
static __thread Ctx *current;
static __thread char errmsg[2048];
static __thread char errmsg_out[2048];

const char *aclnnTestDoubleInfo(void) { return ACLNN_DOUBLE_INFO; }

int64_t aclnnTestDoubleCounter(const char *name) {
    for (int i = 0; i < C_COUNT; i++)
        if (name && strcmp(name, counter_names[i]) == 0) return counters[i];
    if (name && strcmp(name, "acl_refcount") == 0) return (int64_t)refcount;
    return -1;
}

/* Test hooks: "malloc_fail_in" N: the N-th next aclrtMalloc fails. */
int aclnnTestDoubleInject(const char *name, int64_t value) {
    if (name && strcmp(name, "malloc_fail_in") == 0) {
        malloc_fail_in = value;
        return 0;
    }
    return -1;
}

/* The device of the calling thread's current context, -1 if none. */
int aclnnTestDoubleCurrentDevice(void);

void aclTestDoubleBump(int counter, int64_t delta) {
    if (counter >= 0 && counter < C_COUNT) counters[counter] += delta;
}

void aclTestDoubleSetCounter(int counter, int64_t value) {
    if (counter >= 0 && counter < C_COUNT) counters[counter] = value;
}

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void sleep_until(int64_t when) {
    int64_t left;
    while ((left = when - now_ns()) > 0) {
        struct timespec ts = {left / 1000000000LL, left % 1000000000LL};
        nanosleep(&ts, NULL);
    }
}

static long env_long(const char *var) {
    const char *v = getenv(var);
    return v ? strtol(v, NULL, 10) : 0;
}

void aclTestDoubleSleepEnv(const char *var) {
    long us = env_long(var);
    if (us > 0) sleep_until(now_ns() + (int64_t)us * 1000);
}

/* 1 when device d is in the comma-separated id list $var */
static int listed(const char *var, int d) {
    const char *v = getenv(var);
    while (v && *v) {
        char *end;
        long id = strtol(v, &end, 10);
        if (end == v) return 0;
        if (id == d) return 1;
        v = *end == ',' ? end + 1 : end;
        if (*end != ',') break;
    }
    return 0;
}

void aclTestDoubleSetError(const char *fmt, ...) {
    char body[1800];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(body, sizeof body, fmt, ap);
    va_end(ap);
    snprintf(errmsg, sizeof errmsg, "[TEST DOUBLE] %s", body);
}

/* Returns and clears the last error of this thread, like the real one; counts its calls (on
   some SoCs each real call costs a device round trip). */
const char *aclGetRecentErrMsg(void) {
    counters[C_ERRMSG_CALLS]++;
    if (!errmsg[0]) return NULL;
    memcpy(errmsg_out, errmsg, sizeof errmsg_out);
    errmsg[0] = 0;
    return errmsg_out;
}

/* 0 when the runtime may be used by this process, else the error (message set). */
static int ready(const char *fn) {
    if (refcount == 0) {
        aclTestDoubleSetError("%s: ACL is not initialised (or was finalised)", fn);
        return ACL_ERROR_UNINITIALIZE;
    }
    if (getpid() != init_pid) {
        aclTestDoubleSetError("%s: this process inherited ACL through fork(); the driver state "
                              "belongs to process %d", fn, (int)init_pid);
        return ACL_ERROR_RT_DRV_INTERNAL_ERROR;
    }
    return 0;
}

static Ctx *cur(void) {
    Ctx *c = current;
    if (!c || c->magic != CTX_MAGIC || c->gen != generation || device_refs[c->device] <= 0)
        return NULL;
    return c;
}

int aclnnTestDoubleCurrentDevice(void) {
    Ctx *c = cur();
    return c ? c->device : -1;
}

static void teardown(void) { /* what a finalize takes with it */
    generation++;
    for (int d = 0; d < N_DEVICES; d++) {
        device_refs[d] = 0;
        device_broken[d] = 0;
    }
}

int aclInit(const char *configPath) {
    (void)configPath;
    if (refcount > 0) { /* a repeat: one more reference, and the old code (no error message) */
        refcount++;
        return ACL_ERROR_REPEAT_INITIALIZE;
    }
    refcount = 1;
    init_pid = getpid();
    counters[C_INITS]++;
    const char *mode = getenv("ACLNN_TEST_DOUBLE_SAT_MODE");
    for (int d = 0; d < N_DEVICES; d++)
        sat_mode[d] = mode && mode[0] == '0' ? OVERFLOW_SATURATION : OVERFLOW_INFNAN;
    return 0;
}

/* Clears the reference count whoever holds references: ACL is gone for every user. */
int aclFinalize(void) {
    if (refcount == 0) {
        aclTestDoubleSetError("aclFinalize: repeatedly finalized");
        return ACL_ERROR_REPEAT_FINALIZE;
    }
    refcount = 0;
    teardown();
    counters[C_FINALIZES]++;
    return 0;
}

/* Gives back one reference; the last one finalizes. */
int aclFinalizeReference(uint64_t *refCount) {
    if (refcount > 1) {
        refcount--;
        if (refCount) *refCount = refcount;
        return 0;
    }
    if (refcount < 1) {
        if (refCount) *refCount = 0;
        aclTestDoubleSetError("aclFinalizeReference: called repeatedly or without aclInit");
        return ACL_ERROR_REPEAT_FINALIZE;
    }
    refcount = 0;
    teardown();
    counters[C_FINALIZES]++;
    if (refCount) *refCount = 0;
    return 0;
}

int aclrtGetDeviceCount(uint32_t *count) {
    if (!count) return ACL_ERROR_INVALID_PARAM;
    *count = N_DEVICES;
    return 0;
}

const char *aclrtGetSocName(void) { return ACLNN_DOUBLE_SOC; }

/* Binds the device's default context to the calling thread (and only to it). */
int aclrtSetDevice(int32_t deviceId) {
    int rc = ready("aclrtSetDevice");
    if (rc) return rc;
    if (deviceId < 0 || deviceId >= N_DEVICES) {
        aclTestDoubleSetError("aclrtSetDevice: invalid device id %d (the double has 0-%d)",
                              deviceId, N_DEVICES - 1);
        return ACL_ERROR_RT_INVALID_DEVICEID;
    }
    if (listed("ACLNN_TEST_DOUBLE_DEAD_DEVICES", deviceId)) {
        aclTestDoubleSetError("aclrtSetDevice: device %d is lost (driver: no response; injected)",
                              deviceId);
        return ACL_ERROR_RT_DRV_INTERNAL_ERROR;
    }
    if (!device_started[deviceId]) { /* the first start of a device is slow on a real host */
        const char *ms = getenv("ACLNN_TEST_DOUBLE_SETDEVICE_MS");
        long wait = ms ? strtol(ms, NULL, 10) : 0;
        if (wait > 0) {
            struct timespec ts = {wait / 1000, (wait % 1000) * 1000000L};
            nanosleep(&ts, NULL);
        }
        device_started[deviceId] = 1;
    }
    Ctx *c = &contexts[deviceId];
    if (device_refs[deviceId] == 0 || c->gen != generation) {
        c->magic = CTX_MAGIC;
        c->device = deviceId;
        c->gen = generation;
    }
    device_refs[deviceId]++;
    current = c;
    return 0;
}

int aclrtResetDevice(int32_t deviceId) {
    if (deviceId < 0 || deviceId >= N_DEVICES || device_refs[deviceId] <= 0) {
        aclTestDoubleSetError("aclrtResetDevice: device %d is not set", deviceId);
        return ACL_ERROR_RT_INVALID_DEVICEID;
    }
    if (--device_refs[deviceId] == 0) device_broken[deviceId] = 0; /* released: usable again */
    return 0;
}

int aclrtGetDevice(int32_t *deviceId) {
    Ctx *c = cur();
    if (!deviceId) return ACL_ERROR_INVALID_PARAM;
    if (!c) return ACL_ERROR_RT_CONTEXT_NULL;
    *deviceId = c->device;
    return 0;
}

int aclrtGetCurrentContext(void **context) {
    if (!context) return ACL_ERROR_INVALID_PARAM;
    Ctx *c = cur();
    if (!c) {
        aclTestDoubleSetError("aclrtGetCurrentContext: this thread has no current context");
        return ACL_ERROR_RT_CONTEXT_NULL;
    }
    *context = c;
    return 0;
}

int aclrtSetCurrentContext(void *context) {
    Ctx *c = context;
    int rc = ready("aclrtSetCurrentContext");
    if (rc) return rc;
    int known = 0;
    for (int d = 0; d < N_DEVICES; d++) known |= c == &contexts[d];
    if (!known || c->magic != CTX_MAGIC || c->gen != generation || device_refs[c->device] <= 0) {
        aclTestDoubleSetError("aclrtSetCurrentContext: %p is not a live context", context);
        return ACL_ERROR_INVALID_PARAM;
    }
    current = c;
    return 0;
}

int aclrtGetDeviceSatMode(int *mode) {
    Ctx *c = cur();
    if (!mode) return ACL_ERROR_INVALID_PARAM;
    if (!c) return ACL_ERROR_RT_CONTEXT_NULL;
    *mode = sat_mode[c->device];
    return 0;
}

int aclrtSetDeviceSatMode(int mode) {
    Ctx *c = cur();
    if (!c) return ACL_ERROR_RT_CONTEXT_NULL;
    if (mode != OVERFLOW_SATURATION && mode != OVERFLOW_INFNAN) return ACL_ERROR_INVALID_PARAM;
    sat_mode[c->device] = mode; /* streams created from now on */
    return 0;
}

int aclrtCreateStream(void **stream) {
    int rc = ready("aclrtCreateStream");
    if (rc) return rc;
    if (!stream) return ACL_ERROR_INVALID_PARAM;
    Ctx *c = cur();
    if (!c) {
        aclTestDoubleSetError("aclrtCreateStream: no current context on this thread");
        return ACL_ERROR_RT_CONTEXT_NULL;
    }
    Stream *s = calloc(1, sizeof *s);
    if (!s) return ACL_ERROR_BAD_ALLOC;
    s->magic = STREAM_MAGIC;
    s->device = c->device;
    s->gen = generation;
    s->saturate = sat_mode[c->device] == OVERFLOW_SATURATION;
    *stream = s;
    counters[C_STREAMS_LIVE]++;
    return 0;
}

static Stream *as_stream(void *stream) {
    Stream *s = stream;
    return s && s->magic == STREAM_MAGIC && s->gen == generation ? s : NULL;
}

int aclTestDoubleIsStream(void *stream) { return as_stream(stream) != NULL; }

int aclrtDestroyStream(void *stream) {
    Stream *s = stream;
    if (!s || s->magic != STREAM_MAGIC) return ACL_ERROR_INVALID_PARAM;
    s->magic = 0;
    free(s);
    counters[C_STREAMS_LIVE]--;
    return 0;
}

static int one_shot(const char *var) { /* the token file named by $var exists: consume it */
    const char *path = getenv(var);
    return path && path[0] && unlink(path) == 0;
}

int aclTestDoubleLaunch(void *stream, int *saturate) {
    int rc = ready("launch");
    if (rc) return rc;
    Stream *s = as_stream(stream);
    Ctx *c = cur();
    if (!s) {
        aclTestDoubleSetError("launch: %p is not a live stream", stream);
        return ACL_ERROR_INVALID_PARAM;
    }
    if (!c) {
        aclTestDoubleSetError("launch: no current context on this thread");
        return ACL_ERROR_RT_CONTEXT_NULL;
    }
    if (c->device != s->device) {
        aclTestDoubleSetError("launch: the stream is on device %d, the thread's current device "
                              "is %d", s->device, c->device);
        return ACL_ERROR_RT_STREAM_CONTEXT;
    }
    if (device_broken[s->device]) {
        aclTestDoubleSetError("launch: device %d had a fault and was not reset", s->device);
        return ACL_ERROR_RT_DEVICE_TASK_ABORT;
    }
    if (saturate) *saturate = s->saturate;
    const char *log = getenv("ACLNN_TEST_DOUBLE_LAUNCH_LOG");
    if (log && log[0]) {
        int fd = open(log, O_WRONLY | O_APPEND | O_CREAT, 0644);
        if (fd >= 0) {
            char line[64];
            int n = snprintf(line, sizeof line, "device=%d pid=%d\n", s->device, (int)getpid());
            if (write(fd, line, (size_t)n) < 0) { /* a test log: nothing to do */ }
            close(fd);
        }
    }
    if (listed("ACLNN_TEST_DOUBLE_ABORT_DEVICES", s->device)) {
        fprintf(stderr, "[TEST DOUBLE] launch on device %d: injected abort\n", s->device);
        abort(); /* the process dies: a worker that is not isolated takes its pool with it */
    }
    if (listed("ACLNN_TEST_DOUBLE_FAULTY_DEVICES", s->device) ||
        one_shot("ACLNN_TEST_DOUBLE_DEVICE_FAULT")) {
        s->pending = ACL_ERROR_RT_AICORE_EXCEPTION;
        device_broken[s->device] = 1;
        return 1;
    }
    if (one_shot("ACLNN_TEST_DOUBLE_SYNC_TIMEOUT")) {
        s->pending = ACL_ERROR_RT_STREAM_SYNC_TIMEOUT;
        device_broken[s->device] = 1;
        return 1;
    }
    int64_t start = now_ns(); /* the kernel runs after the work before it */
    if (s->busy_until > start) start = s->busy_until;
    s->busy_until = start + (int64_t)env_long("ACLNN_TEST_DOUBLE_KERNEL_US") * 1000;
    return 0;
}

/* timeout in ms, -1 forever. A pending fault or hang is reported here, once. */
int aclrtSynchronizeStreamWithTimeout(void *stream, int32_t timeout) {
    counters[C_SYNC_TIMEOUT_MS] = timeout;
    int rc = ready("aclrtSynchronizeStreamWithTimeout");
    if (rc) return rc;
    Stream *s = as_stream(stream);
    if (!s) return ACL_ERROR_INVALID_PARAM;
    if (s->pending == ACL_ERROR_RT_STREAM_SYNC_TIMEOUT && timeout >= 0) {
        s->pending = 0;
        aclTestDoubleSetError("aclrtSynchronizeStreamWithTimeout: the task did not finish in %d ms "
                              "(injected hang)", timeout);
        return ACL_ERROR_RT_STREAM_SYNC_TIMEOUT;
    }
    if (s->pending == ACL_ERROR_RT_AICORE_EXCEPTION) {
        s->pending = 0;
        aclTestDoubleSetError("aclrtSynchronizeStreamWithTimeout: AI Core exception on device %d "
                              "(injected fault)", s->device);
        return ACL_ERROR_RT_AICORE_EXCEPTION;
    }
    sleep_until(s->busy_until); /* the kernels launched so far finish */
    return 0;
}

/* -- events: a point in a stream's work, and the time the stream reached it ------------------- */

static Event *as_event(void *event) {
    Event *e = event;
    return e && e->magic == EVENT_MAGIC && e->gen == generation ? e : NULL;
}

int aclrtCreateEvent(void **event) {
    int rc = ready("aclrtCreateEvent");
    if (rc) return rc;
    if (!event) return ACL_ERROR_INVALID_PARAM;
    if (getenv("ACLNN_TEST_DOUBLE_NO_EVENTS")) {
        aclTestDoubleSetError("aclrtCreateEvent: events are not supported (injected)");
        return ACL_ERROR_INVALID_PARAM;
    }
    if (!cur()) {
        aclTestDoubleSetError("aclrtCreateEvent: no current context on this thread");
        return ACL_ERROR_RT_CONTEXT_NULL;
    }
    Event *e = calloc(1, sizeof *e);
    if (!e) return ACL_ERROR_BAD_ALLOC;
    e->magic = EVENT_MAGIC;
    e->gen = generation;
    *event = e;
    counters[C_EVENTS_LIVE]++;
    return 0;
}

int aclrtDestroyEvent(void *event) {
    Event *e = event;
    if (!e || e->magic != EVENT_MAGIC) return ACL_ERROR_INVALID_PARAM;
    e->magic = 0;
    free(e);
    counters[C_EVENTS_LIVE]--;
    return 0;
}

int aclrtRecordEvent(void *event, void *stream) {
    int rc = ready("aclrtRecordEvent");
    if (rc) return rc;
    Event *e = as_event(event);
    Stream *s = as_stream(stream);
    if (!e || !s) {
        aclTestDoubleSetError("aclrtRecordEvent: not a live event and stream");
        return ACL_ERROR_INVALID_PARAM;
    }
    int64_t t = now_ns();
    e->at = s->busy_until > t ? s->busy_until : t;
    e->recorded = 1;
    return 0;
}

int aclrtSynchronizeEvent(void *event) {
    Event *e = as_event(event);
    if (!e || !e->recorded) return ACL_ERROR_INVALID_PARAM;
    sleep_until(e->at);
    return 0;
}

/* milliseconds between two recorded events, both reached by their streams */
int aclrtEventElapsedTime(float *ms, void *start, void *end) {
    Event *a = as_event(start), *b = as_event(end);
    if (!ms || !a || !b || !a->recorded || !b->recorded) {
        aclTestDoubleSetError("aclrtEventElapsedTime: two recorded events are needed");
        return ACL_ERROR_INVALID_PARAM;
    }
    if (now_ns() < b->at) {
        aclTestDoubleSetError("aclrtEventElapsedTime: the end event is not complete yet");
        return ACL_ERROR_INVALID_PARAM;
    }
    *ms = (float)((double)(b->at - a->at) / 1e6);
    return 0;
}

/* Kept for callers without a timeout; an injected hang never returns here. */
int aclrtSynchronizeStream(void *stream) {
    Stream *s = as_stream(stream);
    if (s && s->pending == ACL_ERROR_RT_STREAM_SYNC_TIMEOUT) {
        fprintf(stderr, "[TEST DOUBLE] aclrtSynchronizeStream: injected hang, aborting\n");
        abort();
    }
    return aclrtSynchronizeStreamWithTimeout(stream, -1);
}

int aclrtMalloc(void **devPtr, size_t size, int policy) {
    (void)policy;
    int rc = ready("aclrtMalloc");
    if (rc) return rc;
    if (!devPtr || size == 0) {
        aclTestDoubleSetError("aclrtMalloc: size must be > 0 and devPtr not null");
        return ACL_ERROR_INVALID_PARAM;
    }
    Ctx *c = cur();
    if (!c) {
        aclTestDoubleSetError("aclrtMalloc: no current context on this thread");
        return ACL_ERROR_RT_CONTEXT_NULL;
    }
    if (malloc_fail_in > 0 && --malloc_fail_in == 0) {
        aclTestDoubleSetError("aclrtMalloc: out of device memory (%zu bytes; injected)", size);
        return ACL_ERROR_RT_MEMORY_ALLOCATION;
    }
    Alloc *a = malloc(sizeof *a);
    void *p = NULL;
    if (!a || posix_memalign(&p, 32, size) != 0) {
        free(a);
        return ACL_ERROR_BAD_ALLOC;
    }
    memset(p, 0xA5, size); /* device memory is not zeroed */
    a->ptr = p;
    a->size = size;
    a->device = c->device;
    a->next = allocs;
    allocs = a;
    *devPtr = p;
    counters[C_ALLOCS_LIVE]++;
    return 0;
}

int aclrtFree(void *devPtr) {
    for (Alloc **pp = &allocs; *pp; pp = &(*pp)->next) {
        if ((*pp)->ptr == devPtr) {
            Alloc *a = *pp;
            *pp = a->next;
            free(a->ptr);
            free(a);
            counters[C_ALLOCS_LIVE]--;
            return 0;
        }
    }
    aclTestDoubleSetError("aclrtFree: %p is not a live device allocation", devPtr);
    return ACL_ERROR_INVALID_PARAM;
}

static Alloc *find_alloc(const void *ptr, size_t bytes) {
    const char *p = ptr;
    for (Alloc *a = allocs; a; a = a->next)
        if (p >= a->ptr && p <= a->ptr + a->size && bytes <= (size_t)(a->ptr + a->size - p))
            return a;
    return NULL;
}

int aclTestDoubleDeviceRange(const void *ptr, size_t bytes) { return find_alloc(ptr, bytes) != NULL; }

int aclTestDoubleDeviceOf(const void *ptr) {
    Alloc *a = find_alloc(ptr, 0);
    return a ? a->device : -1;
}

/* kinds: 0 host->host, 1 host->device, 2 device->host, 3 device->device */
int aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count, int kind) {
    int rc = ready("aclrtMemcpy");
    if (rc) return rc;
    if (!dst || !src || count > destMax || kind < 0 || kind > 3) {
        aclTestDoubleSetError("aclrtMemcpy: bad arguments (count %zu, destMax %zu, kind %d)",
                              count, destMax, kind);
        return ACL_ERROR_INVALID_PARAM;
    }
    Ctx *c = cur();
    if (!c) {
        aclTestDoubleSetError("aclrtMemcpy: no current context on this thread");
        return ACL_ERROR_RT_CONTEXT_NULL;
    }
    if (device_broken[c->device]) {
        aclTestDoubleSetError("aclrtMemcpy: device %d had a fault and was not reset", c->device);
        return ACL_ERROR_RT_DEVICE_TASK_ABORT;
    }
    int dst_dev = kind == 1 || kind == 3, src_dev = kind == 2 || kind == 3;
    if ((dst_dev && !aclTestDoubleDeviceRange(dst, count)) ||
        (src_dev && !aclTestDoubleDeviceRange(src, count))) {
        aclTestDoubleSetError("aclrtMemcpy: %zu bytes do not lie in one device allocation (kind %d)",
                              count, kind);
        return ACL_ERROR_INVALID_PARAM;
    }
    memmove(dst, src, count);
    if (kind == 1) counters[C_MEMCPY_H2D]++;
    if (kind == 2) counters[C_MEMCPY_D2H]++;
    return 0;
}
