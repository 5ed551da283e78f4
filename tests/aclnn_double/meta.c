/*
 * TEST DOUBLE -- libnnopbase.so stand-in: aclCreateTensor / aclCreateScalar, their destroy
 * functions and aclDestroyAclOpExecutor. Checks more than the real one (the data pointer must be
 * a live device allocation large enough for the storage, the view must lie inside it) so that
 * backend bugs show. As strict as the real one where it matters: storage bytes follow TypeSize
 * (COMPLEX32 4 bytes, STRING/UNDEFINED 16, INT4 half a byte...) and aclCreateScalar returns
 * NULL for the dtypes an aclScalar cannot hold. Not the real CANN.
 */
#include <stdlib.h>
#include <string.h>

#include "aclnn_double.h"

#define BITS 1000 /* TypeSize of a sub-byte type: BITS + its width in bits */

int aclTestDoubleTypeSize(int dtype) {
    switch (dtype) {
    case DT_FLOAT: case DT_INT32: case DT_UINT32: case DT_COMPLEX32: return 4;
    case DT_FLOAT16: case DT_INT16: case DT_UINT16: case DT_BF16: return 2;
    case DT_INT8: case DT_UINT8: case DT_BOOL: case DT_HIFLOAT8: case DT_FLOAT8_E5M2:
    case DT_FLOAT8_E4M3FN: case DT_FLOAT8_E8M0: return 1;
    case DT_INT64: case DT_UINT64: case DT_DOUBLE: case DT_COMPLEX64: return 8;
    case DT_COMPLEX128: return 16;
    case DT_INT4: case DT_FLOAT4_E2M1: case DT_FLOAT4_E1M2: return BITS + 4;
    case DT_UINT1: return BITS + 1;
    case DT_FLOAT6_E3M2: case DT_FLOAT6_E2M3: return BITS + 6;
    default: return 16; /* STRING, UNDEFINED and anything unknown: sizeof(complex128) */
    }
}

int64_t aclTestDoubleShapeBytes(int dtype, int64_t numel) {
    int size = aclTestDoubleTypeSize(dtype);
    if (size > BITS) return (numel * (size - BITS) + 7) >> 3;
    return numel * size;
}

aclTensor *aclCreateTensor(const int64_t *viewDims, uint64_t viewDimsNum, int dataType,
                           const int64_t *stride, int64_t offset, int format,
                           const int64_t *storageDims, uint64_t storageDimsNum, void *tensorData) {
    if ((!viewDims && viewDimsNum) || (!storageDims && storageDimsNum) || viewDimsNum > MAX_DIMS) {
        aclTestDoubleSetError("aclCreateTensor: null dims or more than %d dims", MAX_DIMS);
        return NULL;
    }
    aclTestDoubleSetCounter(C_LAST_FORMAT, format);
    aclTensor *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->magic = TENSOR_MAGIC;
    t->dtype = dataType;
    t->format = format;
    t->ndim = viewDimsNum;
    t->offset = offset;
    t->data = tensorData;
    int64_t acc = 1, last = offset, empty = 0, negative = offset < 0;
    for (int64_t i = (int64_t)viewDimsNum - 1; i >= 0; i--) {
        t->dims[i] = viewDims[i];
        t->strides[i] = stride ? stride[i] : acc;
        acc *= viewDims[i] > 0 ? viewDims[i] : 1;
        empty |= viewDims[i] == 0;
        negative |= viewDims[i] < 0 || t->strides[i] < 0;
        last += (viewDims[i] - 1) * t->strides[i];
    }
    t->storage_numel = 1;
    for (uint64_t i = 0; i < storageDimsNum; i++) t->storage_numel *= storageDims[i];
    size_t bytes = (size_t)aclTestDoubleShapeBytes(dataType, t->storage_numel);
    const char *bad = NULL;
    if (negative) bad = "negative dims, strides or offset";
    else if (!empty && last >= t->storage_numel) bad = "the view reaches beyond the storage";
    else if (bytes && (!tensorData || !aclTestDoubleDeviceRange(tensorData, bytes)))
        bad = "tensorData is not a device allocation large enough for the storage (TypeSize bytes)";
    if (bad) {
        aclTestDoubleSetError("aclCreateTensor: %s", bad);
        free(t);
        return NULL;
    }
    aclTestDoubleBump(C_TENSORS_LIVE, 1);
    return t;
}

int aclDestroyTensor(const aclTensor *tensor) {
    if (!tensor) return 0;
    if (tensor->magic != TENSOR_MAGIC) return ACLNN_ERR_PARAM_INVALID;
    ((aclTensor *)tensor)->magic = 0;
    free((void *)tensor);
    aclTestDoubleBump(C_TENSORS_LIVE, -1);
    return 0;
}

/* Bytes an aclScalar reads from value for dtype, 0 for a dtype it has no case for (the real
   constructor throws, aclCreateScalar catches and returns NULL). */
static size_t scalar_bytes(int dtype) {
    switch (dtype) {
    case DT_FLOAT: case DT_INT32: case DT_UINT32: return 4;
    case DT_FLOAT16: case DT_BF16: case DT_INT16: case DT_UINT16: return 2;
    case DT_INT8: case DT_UINT8: case DT_BOOL: case DT_HIFLOAT8: case DT_FLOAT8_E5M2:
    case DT_FLOAT8_E4M3FN: case DT_FLOAT8_E8M0: case DT_FLOAT6_E3M2: case DT_FLOAT6_E2M3:
    case DT_FLOAT4_E2M1: case DT_FLOAT4_E1M2: return 1;
    case DT_INT64: case DT_UINT64: case DT_DOUBLE: case DT_COMPLEX64: return 8;
    case DT_COMPLEX128: return 16;
    default: return 0; /* STRING, UNDEFINED, INT4, UINT1, COMPLEX32, ... */
    }
}

aclScalar *aclCreateScalar(void *value, int dataType) {
    if (!value) return NULL;
    size_t n = scalar_bytes(dataType);
    if (!n) {
        aclTestDoubleSetError("aclCreateScalar: dataType %d not supported", dataType);
        return NULL;
    }
    aclScalar *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->magic = SCALAR_MAGIC;
    s->dtype = dataType;
    memcpy(s->bytes, value, n);
    aclTestDoubleBump(C_SCALARS_LIVE, 1);
    return s;
}

int aclDestroyScalar(const aclScalar *scalar) {
    if (!scalar) return 0;
    if (scalar->magic != SCALAR_MAGIC) return ACLNN_ERR_PARAM_INVALID;
    ((aclScalar *)scalar)->magic = 0;
    free((void *)scalar);
    aclTestDoubleBump(C_SCALARS_LIVE, -1);
    return 0;
}

/* An executor phase 1 made and phase 2 never ran (its first member is the magic). */
int aclDestroyAclOpExecutor(void *executor) {
    if (!executor) return ACLNN_ERR_INNER_NULLPTR;
    int *magic = executor;
    if (*magic != EXECUTOR_MAGIC) {
        aclTestDoubleSetError("aclDestroyAclOpExecutor: %p is not a live executor", executor);
        return ACLNN_ERR_INNER;
    }
    *magic = 0;
    free(executor);
    aclTestDoubleBump(C_EXECUTORS_LIVE, -1);
    aclTestDoubleBump(C_EXECUTORS_DESTROYED, 1);
    return 0;
}

/* -- arrays and lists (acl_meta.h): the values are copied; a null value with a size is refused,
   as the real constructors do (their copy would read from null). --------------------------------- */

#define MAKE_ARRAY(T, ET, MAGIC, NAME)                                                         \
    T *NAME(const ET *value, uint64_t size) {                                                  \
        if (!value && size) {                                                                  \
            aclTestDoubleSetError(#NAME ": value is null but size is %llu",                    \
                                  (unsigned long long)size);                                   \
            return NULL;                                                                       \
        }                                                                                      \
        T *a = calloc(1, sizeof *a);                                                           \
        if (!a) return NULL;                                                                   \
        a->v = calloc(size ? size : 1, sizeof *a->v);                                          \
        if (!a->v) { free(a); return NULL; }                                                   \
        for (uint64_t i = 0; i < size; i++) a->v[i] = value[i];                                \
        a->magic = MAGIC;                                                                      \
        a->size = size;                                                                        \
        aclTestDoubleBump(C_ARRAYS_LIVE, 1);                                                   \
        return a;                                                                              \
    }

MAKE_ARRAY(aclIntArray, int64_t, INTARRAY_MAGIC, aclCreateIntArray)
MAKE_ARRAY(aclFloatArray, float, FLOATARRAY_MAGIC, aclCreateFloatArray)
MAKE_ARRAY(aclBoolArray, unsigned char, BOOLARRAY_MAGIC, aclCreateBoolArray)
MAKE_ARRAY(aclTensorList, aclTensor *, TENSORLIST_MAGIC, aclCreateTensorList)
MAKE_ARRAY(aclScalarList, aclScalar *, SCALARLIST_MAGIC, aclCreateScalarList)

#define DESTROY_ARRAY(T, MAGIC, NAME, EACH)                                                    \
    int NAME(const T *array) {                                                                 \
        if (!array) return 0;                                                                  \
        if (array->magic != MAGIC) return ACLNN_ERR_PARAM_INVALID;                             \
        T *a = (T *)array;                                                                     \
        for (uint64_t i = 0; i < a->size; i++) EACH;                                           \
        a->magic = 0;                                                                          \
        free(a->v);                                                                            \
        free(a);                                                                               \
        aclTestDoubleBump(C_ARRAYS_LIVE, -1);                                                  \
        return 0;                                                                              \
    }

DESTROY_ARRAY(aclIntArray, INTARRAY_MAGIC, aclDestroyIntArray, (void)0)
DESTROY_ARRAY(aclFloatArray, FLOATARRAY_MAGIC, aclDestroyFloatArray, (void)0)
DESTROY_ARRAY(aclBoolArray, BOOLARRAY_MAGIC, aclDestroyBoolArray, (void)0)
DESTROY_ARRAY(aclTensorList, TENSORLIST_MAGIC, aclDestroyTensorList, aclDestroyTensor(a->v[i]))
DESTROY_ARRAY(aclScalarList, SCALARLIST_MAGIC, aclDestroyScalarList, aclDestroyScalar(a->v[i]))
