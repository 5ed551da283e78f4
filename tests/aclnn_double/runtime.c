/*
 * TEST DOUBLE -- libascendcl.so stand-in: aclInit/aclFinalize, devices, streams, "device"
 * memory (host malloc), aclrtMemcpy, aclGetRecentErrMsg, plus the live-object counters that the
 * leak tests read through aclnnTestDoubleCounter(). Not the real CANN runtime.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aclnn_double.h"

typedef struct Alloc {
    char *ptr;
    size_t size;
    struct Alloc *next;
} Alloc;

static int64_t counters[C_COUNT];
static const char *counter_names[C_COUNT] = {
    "allocs_live", "tensors_live", "scalars_live", "executors_live", "streams_live", "inits",
    "finalizes", "workspace_runs", "phase1_calls", "phase2_calls", "memcpy_h2d", "memcpy_d2h"};
static Alloc *allocs;
static int initialized;
static int device = -1;
static int stream_token; /* the one stream handle is &stream_token */
static __thread char errmsg[2048];
static __thread char errmsg_out[2048];

const char *aclnnTestDoubleInfo(void) { return ACLNN_DOUBLE_INFO; }

int64_t aclnnTestDoubleCounter(const char *name) {
    for (int i = 0; i < C_COUNT; i++)
        if (name && strcmp(name, counter_names[i]) == 0) return counters[i];
    return -1;
}

void aclTestDoubleBump(int counter, int64_t delta) {
    if (counter >= 0 && counter < C_COUNT) counters[counter] += delta;
}

void aclTestDoubleSetError(const char *fmt, ...) {
    char body[1800];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(body, sizeof body, fmt, ap);
    va_end(ap);
    snprintf(errmsg, sizeof errmsg, "[TEST DOUBLE] %s", body);
}

/* Returns and clears the last error of this thread, like the real one. */
const char *aclGetRecentErrMsg(void) {
    if (!errmsg[0]) return NULL;
    memcpy(errmsg_out, errmsg, sizeof errmsg_out);
    errmsg[0] = 0;
    return errmsg_out;
}

int aclInit(const char *configPath) {
    (void)configPath;
    if (initialized) {
        aclTestDoubleSetError("aclInit: already initialized");
        return ACL_ERROR_REPEAT_INITIALIZE;
    }
    initialized = 1;
    counters[C_INITS]++;
    return 0;
}

int aclFinalize(void) {
    if (!initialized) {
        aclTestDoubleSetError("aclFinalize: not initialized");
        return ACL_ERROR_UNINITIALIZE;
    }
    initialized = 0;
    counters[C_FINALIZES]++;
    return 0;
}

int aclrtSetDevice(int32_t deviceId) {
    if (!initialized) return ACL_ERROR_UNINITIALIZE;
    if (deviceId < 0 || deviceId > 7) {
        aclTestDoubleSetError("aclrtSetDevice: invalid device id %d (the double has 0-7)", deviceId);
        return ACL_ERROR_RT_INVALID_DEVICEID;
    }
    device = deviceId;
    return 0;
}

int aclrtResetDevice(int32_t deviceId) {
    if (deviceId != device) return ACL_ERROR_RT_INVALID_DEVICEID;
    device = -1;
    return 0;
}

int aclrtCreateStream(void **stream) {
    if (!stream) return ACL_ERROR_INVALID_PARAM;
    if (device < 0) return ACL_ERROR_RT_INVALID_DEVICEID;
    *stream = &stream_token;
    counters[C_STREAMS_LIVE]++;
    return 0;
}

int aclTestDoubleIsStream(void *stream) {
    return stream == (void *)&stream_token && counters[C_STREAMS_LIVE] > 0;
}

int aclrtDestroyStream(void *stream) {
    if (!aclTestDoubleIsStream(stream)) return ACL_ERROR_INVALID_PARAM;
    counters[C_STREAMS_LIVE]--;
    return 0;
}

int aclrtSynchronizeStream(void *stream) {
    return aclTestDoubleIsStream(stream) ? 0 : ACL_ERROR_INVALID_PARAM;
}

int aclrtMalloc(void **devPtr, size_t size, int policy) {
    (void)policy;
    if (!devPtr || size == 0) {
        aclTestDoubleSetError("aclrtMalloc: size must be > 0 and devPtr not null");
        return ACL_ERROR_INVALID_PARAM;
    }
    if (device < 0) return ACL_ERROR_RT_INVALID_DEVICEID;
    Alloc *a = malloc(sizeof *a);
    void *p = NULL;
    if (!a || posix_memalign(&p, 32, size) != 0) {
        free(a);
        return ACL_ERROR_BAD_ALLOC;
    }
    memset(p, 0xA5, size); /* device memory is not zeroed */
    a->ptr = p;
    a->size = size;
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

int aclTestDoubleDeviceRange(const void *ptr, size_t bytes) {
    const char *p = ptr;
    for (Alloc *a = allocs; a; a = a->next)
        if (p >= a->ptr && p <= a->ptr + a->size && bytes <= (size_t)(a->ptr + a->size - p))
            return 1;
    return 0;
}

/* kinds: 0 host->host, 1 host->device, 2 device->host, 3 device->device */
int aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count, int kind) {
    if (!dst || !src || count > destMax || kind < 0 || kind > 3) {
        aclTestDoubleSetError("aclrtMemcpy: bad arguments (count %zu, destMax %zu, kind %d)",
                              count, destMax, kind);
        return ACL_ERROR_INVALID_PARAM;
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
