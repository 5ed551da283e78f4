/*
 * TEST DOUBLE of the Huawei Ascend CANN aclnn C API -- NOT the real library.
 *
 * Three small shared libraries with the real names and symbols (libascendcl.so: runtime and
 * memory; libnnopbase.so: aclCreateTensor/aclCreateScalar; libopapi_nn.so: the five activation
 * backward operators) that run on the CPU. "Device memory" is host memory. The operators follow
 * the phase-1 checks and float32 kernels described in shared/research/aclnn-facts.md. They exist
 * so that conformance/backends/aclnn_backend.py can be tested on machines without an NPU.
 *
 * Where the adapter depends on it, the double is as strict as the real library: aclCreateScalar
 * refuses the dtypes aclScalar cannot hold, device sizes follow the library's TypeSize table,
 * aclInit keeps a reference count (100002 on a repeat), the current device/context is per
 * thread, a device fault or a stream-sync timeout can be injected, operators need
 * ASCEND_OPP_PATH (561107 without it), and ACL state inherited through fork() is dead.
 *
 * Injection (for tests): ACLNN_TEST_DOUBLE_DEVICE_FAULT=FILE / ACLNN_TEST_DOUBLE_SYNC_TIMEOUT=FILE
 * make the next launch fault / hang once, if FILE exists (it is removed: one shot, across
 * processes); ACLNN_TEST_DOUBLE_SETDEVICE_MS=N makes a device's first aclrtSetDevice take N ms;
 * ACLNN_TEST_DOUBLE_SAT_MODE=0 starts devices in saturation mode (read by aclInit);
 * ACLNN_TEST_DOUBLE_WRITES_INPUT=1 makes every kernel also write its second input (a bug the
 * "inputs are unchanged" check must see); aclnnTestDoubleInject("malloc_fail_in", N).
 *
 * Several devices (N_DEVICES): ACLNN_TEST_DOUBLE_DEAD_DEVICES=2,5 makes aclrtSetDevice of those
 * ids fail (a lost device); ACLNN_TEST_DOUBLE_FAULTY_DEVICES=1 makes every kernel launched on
 * those ids fault (the stream sync reports an AI Core exception), ACLNN_TEST_DOUBLE_ABORT_DEVICES=3
 * makes a launch there abort the process; ACLNN_TEST_DOUBLE_LAUNCH_LOG=
 * FILE appends one line "device=D pid=P" per kernel launch (O_APPEND: many processes share it).
 *
 * Timing: ACLNN_TEST_DOUBLE_PHASE1_US=N makes every GetWorkspaceSize take N microseconds (host
 * time); ACLNN_TEST_DOUBLE_KERNEL_US=N makes every kernel take N microseconds of "device" time:
 * the launch returns at once, the stream is busy N us longer, a stream sync waits for it, and an
 * event recorded on the stream (aclrtCreateEvent/RecordEvent/EventElapsedTime) reads the time
 * the stream reaches it. ACLNN_TEST_DOUBLE_NO_EVENTS=1 makes aclrtCreateEvent fail (an old
 * runtime), so that the adapter's host-time fallback is tested.
 */
#ifndef ACLNN_TEST_DOUBLE_H
#define ACLNN_TEST_DOUBLE_H

#include <stddef.h>
#include <stdint.h>

#define ACLNN_DOUBLE_INFO "aclnn TEST DOUBLE (aclnn-conformance CPU stand-in; not CANN, not an NPU)"
#define ACLNN_DOUBLE_SOC "TEST-DOUBLE-SoC (aclnn TEST DOUBLE, no NPU)"
#define MAX_DIMS 32
#define N_DEVICES 8
#define TENSOR_MAGIC 0x54454e53
#define SCALAR_MAGIC 0x5343414c
#define EXECUTOR_MAGIC 0x45584543
#define INTARRAY_MAGIC 0x494e5441
#define FLOATARRAY_MAGIC 0x464c5441
#define BOOLARRAY_MAGIC 0x424f4f41
#define TENSORLIST_MAGIC 0x544e534c
#define SCALARLIST_MAGIC 0x53434c53

/* aclDataType values (acl_base_rt.h) */
enum { DT_UNDEFINED = -1, DT_FLOAT = 0, DT_FLOAT16 = 1, DT_INT8 = 2, DT_INT32 = 3, DT_UINT8 = 4,
       DT_INT16 = 6, DT_UINT16 = 7, DT_UINT32 = 8, DT_INT64 = 9, DT_UINT64 = 10, DT_DOUBLE = 11,
       DT_BOOL = 12, DT_STRING = 13, DT_COMPLEX64 = 16, DT_COMPLEX128 = 17, DT_BF16 = 27,
       DT_INT4 = 29, DT_UINT1 = 30, DT_COMPLEX32 = 33, DT_HIFLOAT8 = 34, DT_FLOAT8_E5M2 = 35,
       DT_FLOAT8_E4M3FN = 36, DT_FLOAT8_E8M0 = 37, DT_FLOAT6_E3M2 = 38, DT_FLOAT6_E2M3 = 39,
       DT_FLOAT4_E2M1 = 40, DT_FLOAT4_E1M2 = 41 };

enum { ACLNN_SUCCESS = 0, ACLNN_ERR_PARAM_NULLPTR = 161001, ACLNN_ERR_PARAM_INVALID = 161002,
       ACLNN_ERR_RUNTIME_ERROR = 361001, ACLNN_ERR_INNER = 561000,
       ACLNN_ERR_INNER_NULLPTR = 561103, ACLNN_ERR_INNER_OPP_PATH_NOT_FOUND = 561107 };

enum { ACL_ERROR_INVALID_PARAM = 100000, ACL_ERROR_UNINITIALIZE = 100001,
       ACL_ERROR_REPEAT_INITIALIZE = 100002, ACL_ERROR_REPEAT_FINALIZE = 100037,
       ACL_ERROR_BAD_ALLOC = 200000, ACL_ERROR_RT_INVALID_DEVICEID = 107001,
       ACL_ERROR_RT_CONTEXT_NULL = 107002, ACL_ERROR_RT_STREAM_CONTEXT = 107003,
       ACL_ERROR_RT_DEVICE_TASK_ABORT = 107022, ACL_ERROR_RT_MEMORY_ALLOCATION = 207001,
       ACL_ERROR_RT_AICORE_EXCEPTION = 507015, ACL_ERROR_RT_STREAM_SYNC_TIMEOUT = 507046,
       ACL_ERROR_RT_DRV_INTERNAL_ERROR = 507899 };

/* aclrtFloatOverflowMode */
enum { OVERFLOW_SATURATION = 0, OVERFLOW_INFNAN = 1 };

/* counters (aclnnTestDoubleCounter names) */
enum { C_ALLOCS_LIVE, C_TENSORS_LIVE, C_SCALARS_LIVE, C_EXECUTORS_LIVE, C_STREAMS_LIVE,
       C_INITS, C_FINALIZES, C_WORKSPACE_RUNS, C_PHASE1, C_PHASE2, C_MEMCPY_H2D, C_MEMCPY_D2H,
       C_ERRMSG_CALLS, C_SYNC_TIMEOUT_MS, C_LAST_FORMAT, C_EXECUTORS_DESTROYED, C_EVENTS_LIVE,
       C_ARRAYS_LIVE, C_COUNT };

typedef struct aclTensor {
    int magic;
    int dtype;
    int format;
    uint64_t ndim;
    int64_t dims[MAX_DIMS];
    int64_t strides[MAX_DIMS];
    int64_t offset;
    int64_t storage_numel;
    void *data;
} aclTensor;

typedef struct aclScalar {
    int magic;
    int dtype;
    unsigned char bytes[16];
} aclScalar;

/* aclIntArray, aclFloatArray, aclBoolArray, aclTensorList, aclScalarList: the values copied
   (a list holds the pointers; destroying it destroys its tensors or scalars, as the real one) */
typedef struct aclIntArray { int magic; uint64_t size; int64_t *v; } aclIntArray;
typedef struct aclFloatArray { int magic; uint64_t size; float *v; } aclFloatArray;
typedef struct aclBoolArray { int magic; uint64_t size; unsigned char *v; } aclBoolArray;
typedef struct aclTensorList { int magic; uint64_t size; const aclTensor **v; } aclTensorList;
typedef struct aclScalarList { int magic; uint64_t size; const aclScalar **v; } aclScalarList;

/* exported by libascendcl.so (the double's runtime) for the other two libraries */
void aclTestDoubleBump(int counter, int64_t delta);
void aclTestDoubleSetCounter(int counter, int64_t value);
int aclTestDoubleDeviceRange(const void *ptr, size_t bytes); /* 1 if inside one allocation */
int aclTestDoubleDeviceOf(const void *ptr);                  /* device of an allocation or -1 */
int aclTestDoubleIsStream(void *stream);
int aclnnTestDoubleCurrentDevice(void); /* the calling thread's current device, -1 if none */
/* A kernel launch on stream: 0 run it now; 1 launched but it faults or hangs (the stream sync
   reports it); or an ACL error (message set) when it cannot be launched at all. */
int aclTestDoubleLaunch(void *stream, int *saturate);
void aclTestDoubleSetError(const char *fmt, ...);
/* sleep the number of microseconds $var names (nothing when unset or <= 0) */
void aclTestDoubleSleepEnv(const char *var);

/* exported by libnnopbase.so: the library's TypeSize (bytes, or 1000 + bits for sub-byte
   types) and the bytes a storage of numel elements occupies (CalcShapeBytes) */
int aclTestDoubleTypeSize(int dtype);
int64_t aclTestDoubleShapeBytes(int dtype, int64_t numel);

#endif
