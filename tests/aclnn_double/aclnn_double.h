/*
 * TEST DOUBLE of the Huawei Ascend CANN aclnn C API -- NOT the real library.
 *
 * Three small shared libraries with the real names and symbols (libascendcl.so: runtime and
 * memory; libnnopbase.so: aclCreateTensor/aclCreateScalar; libopapi_nn.so: the five activation
 * backward operators) that run on the CPU. "Device memory" is host memory. The operators follow
 * the phase-1 checks and float32 kernels described in shared/research/aclnn-facts.md. They exist
 * so that conformance/backends/aclnn_backend.py can be tested on machines without an NPU.
 */
#ifndef ACLNN_TEST_DOUBLE_H
#define ACLNN_TEST_DOUBLE_H

#include <stddef.h>
#include <stdint.h>

#define ACLNN_DOUBLE_INFO "aclnn TEST DOUBLE (aclnn-conformance CPU stand-in; not CANN, not an NPU)"
#define MAX_DIMS 32
#define TENSOR_MAGIC 0x54454e53
#define SCALAR_MAGIC 0x5343414c

/* aclDataType values (acl_base_rt.h) */
enum { DT_FLOAT = 0, DT_FLOAT16 = 1, DT_INT8 = 2, DT_INT32 = 3, DT_UINT8 = 4, DT_INT16 = 6,
       DT_UINT16 = 7, DT_UINT32 = 8, DT_INT64 = 9, DT_UINT64 = 10, DT_DOUBLE = 11, DT_BOOL = 12,
       DT_COMPLEX64 = 16, DT_COMPLEX128 = 17, DT_BF16 = 27, DT_COMPLEX32 = 33 };

enum { ACLNN_SUCCESS = 0, ACLNN_ERR_PARAM_NULLPTR = 161001, ACLNN_ERR_PARAM_INVALID = 161002,
       ACLNN_ERR_RUNTIME_ERROR = 361001, ACLNN_ERR_INNER = 561000 };

enum { ACL_ERROR_INVALID_PARAM = 100000, ACL_ERROR_REPEAT_INITIALIZE = 100002,
       ACL_ERROR_UNINITIALIZE = 100001, ACL_ERROR_BAD_ALLOC = 200000,
       ACL_ERROR_RT_INVALID_DEVICEID = 107001 };

/* counters (aclnnTestDoubleCounter names) */
enum { C_ALLOCS_LIVE, C_TENSORS_LIVE, C_SCALARS_LIVE, C_EXECUTORS_LIVE, C_STREAMS_LIVE,
       C_INITS, C_FINALIZES, C_WORKSPACE_RUNS, C_PHASE1, C_PHASE2, C_MEMCPY_H2D, C_MEMCPY_D2H,
       C_COUNT };

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

/* exported by libascendcl.so (the double's runtime) for the other two libraries */
void aclTestDoubleBump(int counter, int64_t delta);
int aclTestDoubleDeviceRange(const void *ptr, size_t bytes); /* 1 if inside one allocation */
int aclTestDoubleIsStream(void *stream);
void aclTestDoubleSetError(const char *fmt, ...);

/* exported by libnnopbase.so */
size_t aclTestDoubleElemSize(int dtype);

#endif
