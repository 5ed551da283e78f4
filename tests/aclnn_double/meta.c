/*
 * TEST DOUBLE -- libnnopbase.so stand-in: aclCreateTensor / aclCreateScalar and their destroy
 * functions. Checks more than the real one (the data pointer must be a live device allocation
 * and the view must lie inside the storage) so that backend bugs show. Not the real CANN.
 */
#include <stdlib.h>
#include <string.h>

#include "aclnn_double.h"

size_t aclTestDoubleElemSize(int dtype) {
    switch (dtype) {
    case DT_FLOAT: case DT_INT32: case DT_UINT32: return 4;
    case DT_FLOAT16: case DT_INT16: case DT_UINT16: case DT_BF16: return 2;
    case DT_INT64: case DT_UINT64: case DT_DOUBLE: case DT_COMPLEX64: return 8;
    case DT_COMPLEX128: return 16;
    default: return 1; /* int8, uint8, bool, and the opaque types stored as bytes */
    }
}

aclTensor *aclCreateTensor(const int64_t *viewDims, uint64_t viewDimsNum, int dataType,
                           const int64_t *stride, int64_t offset, int format,
                           const int64_t *storageDims, uint64_t storageDimsNum, void *tensorData) {
    if ((!viewDims && viewDimsNum) || (!storageDims && storageDimsNum) || viewDimsNum > MAX_DIMS) {
        aclTestDoubleSetError("aclCreateTensor: null dims or more than %d dims", MAX_DIMS);
        return NULL;
    }
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
    size_t bytes = (size_t)t->storage_numel * aclTestDoubleElemSize(dataType);
    const char *bad = NULL;
    if (negative) bad = "negative dims, strides or offset";
    else if (!empty && last >= t->storage_numel) bad = "the view reaches beyond the storage";
    else if (bytes && (!tensorData || !aclTestDoubleDeviceRange(tensorData, bytes)))
        bad = "tensorData is not a device allocation large enough for the storage";
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

aclScalar *aclCreateScalar(void *value, int dataType) {
    if (!value) return NULL;
    aclScalar *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->magic = SCALAR_MAGIC;
    s->dtype = dataType;
    memcpy(s->bytes, value, aclTestDoubleElemSize(dataType));
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
