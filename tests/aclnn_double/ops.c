/*
 * TEST DOUBLE -- libopapi_nn.so stand-in: the five activation-backward operators, two-phase,
 * run on the CPU. Phase 1 follows the check order and status codes of
 * shared/research/aclnn-facts.md (sections 2-6, Atlas A2 dtype lists: BF16 allowed). Phase 2
 * computes in float32 like the kernels (DOUBLE LeakyRelu in double with a float slope), rounds
 * to the kernel's dtype, then casts to the output dtype with round-to-nearest-even, writing only
 * the output view. A non-contiguous input makes phase 1 ask for a workspace, and phase 2 checks
 * that it got exactly that. Like the real library, an operator that would launch a kernel needs
 * the op package (ASCEND_OPP_PATH, or ASCEND_HOME_PATH/opp_latest): 561107 without it, after the
 * parameter checks. Phase 2 launches through the runtime (current device, stream, injected
 * faults) and, in saturation mode, clamps overflows to the dtype's largest finite value and NaN
 * to 0. Not the real CANN operators.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "aclnn_double.h"

enum { OP_LEAKY = 1, OP_HARDSHRINK, OP_SOFTPLUS, OP_GELU, OP_ELU, OP_SWISH, OP_SCALE_SHIFT, OP_LIST_ECHO, OP_WEIGHTED_HYPOT };
#define UNDEF (-2)

typedef struct aclOpExecutor {
    int magic; /* first: aclDestroyAclOpExecutor (libnnopbase) checks it */
    int op, nothing, kdt, flag, saturate;
    const aclTensor *a, *b, *out; /* gradOutput, self (or selfOrResult), output */
    float s1, s2, s3;
    double d1, d2; /* OP_SCALE_SHIFT: alpha, shift (by value: int64_t and double) */
    uint64_t ws;
} aclOpExecutor;

/* -- dtypes ---------------------------------------------------------------------------------- */

static int is_float(int d) { return d == DT_FLOAT || d == DT_FLOAT16 || d == DT_DOUBLE || d == DT_BF16; }
static int is_complex(int d) { return d == DT_COMPLEX64 || d == DT_COMPLEX128 || d == DT_COMPLEX32; }
static int is_intlike(int d) {
    return d == DT_INT8 || d == DT_INT16 || d == DT_INT32 || d == DT_INT64 || d == DT_UINT8 ||
           d == DT_UINT16 || d == DT_UINT32 || d == DT_UINT64 || d == DT_BOOL;
}

static int in_list(int d, const int *list) {
    for (; *list != UNDEF; list++)
        if (*list == d) return 1;
    return 0;
}

static const int FLOAT3[] = {DT_FLOAT, DT_FLOAT16, DT_BF16, UNDEF};
static const int FLOAT4[] = {DT_FLOAT, DT_FLOAT16, DT_DOUBLE, DT_BF16, UNDEF};
static const int SLOPE[] = {DT_FLOAT, DT_FLOAT16, DT_DOUBLE, DT_INT32, DT_INT64, DT_INT8,
                            DT_UINT8, DT_BOOL, DT_INT16, DT_BF16, UNDEF};
static const int SOFTPLUS_SELF[] = {DT_INT8, DT_INT16, DT_INT32, DT_INT64, DT_UINT8, DT_FLOAT16,
                                    DT_FLOAT, DT_DOUBLE, DT_BOOL, DT_BF16, UNDEF};

/* PromoteType restricted to what these ops can reach (floats, and int/bool with a float). */
static int promote(int a, int b) {
    if (a == b) return a;
    if (is_float(a) && is_intlike(b)) return a;
    if (is_float(b) && is_intlike(a)) return b;
    if (!is_float(a) || !is_float(b)) return UNDEF;
    if (a == DT_DOUBLE || b == DT_DOUBLE) return DT_DOUBLE;
    return DT_FLOAT; /* f16+f32, bf16+f32, f16+bf16 */
}

/* CanCast(from, to), limited to the outputs this double can write (floats, complex64/128). */
static int can_write(int from, int to) {
    if (is_complex(from) && !is_complex(to)) return 0;
    return is_float(to) || to == DT_COMPLEX64 || to == DT_COMPLEX128;
}

/* -- element conversions ----------------------------------------------------------------------- */

static float bits_f(uint32_t x) { float f; memcpy(&f, &x, 4); return f; }
static uint32_t f_bits(float f) { uint32_t x; memcpy(&x, &f, 4); return x; }

static float half_to_float(uint16_t h) {
    uint32_t s = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 31, m = h & 0x3ff;
    if (e == 0) return m ? (s ? -1.0f : 1.0f) * (float)m * 0x1p-24f : bits_f(s);
    if (e == 31) return bits_f(s | 0x7f800000u | (m << 13));
    return bits_f(s | ((e + 112) << 23) | (m << 13));
}

static uint16_t float_to_half(float f) { /* round to nearest even */
    uint32_t x = f_bits(f), ax = x & 0x7fffffffu;
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    if (ax > 0x7f800000u) return sign | 0x7e00 | ((ax >> 13) & 0x1ff);
    if (ax >= 0x477ff000u) return sign | 0x7c00; /* >= 65520 (and inf) */
    if (ax < 0x38800000u) return sign | (uint16_t)rintf(bits_f(ax) * 0x1p24f); /* subnormal */
    ax += 0xc8000fffu + ((ax >> 13) & 1); /* rebias exponent (-112 << 23) and round */
    return sign | (uint16_t)(ax >> 13);
}

static uint16_t float_to_bf16(float f) { /* round to nearest even */
    uint32_t x = f_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40);
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1)) >> 16);
}

/* double -> float rounding to odd: a following RNE to f16/bf16 is then correctly rounded */
static float to_float_odd(double d) {
    float f = (float)d;
    if (isfinite(f) && (double)f != d && !(f_bits(f) & 1))
        f = nextafterf(f, (double)f < d ? INFINITY : -INFINITY);
    return f;
}

/* One element of dtype d at p, as double (complex: the real part; opaque dtypes: 0). */
static double load_bytes(int d, const unsigned char *p) {
    uint16_t h;
    switch (d) {
    case DT_FLOAT: case DT_COMPLEX64: { float f; memcpy(&f, p, 4); return f; }
    case DT_DOUBLE: case DT_COMPLEX128: { double v; memcpy(&v, p, 8); return v; }
    case DT_FLOAT16: memcpy(&h, p, 2); return half_to_float(h);
    case DT_BF16: memcpy(&h, p, 2); return bits_f((uint32_t)h << 16);
    case DT_INT8: return *(const int8_t *)p;
    case DT_UINT8: return *p;
    case DT_BOOL: return *p != 0;
    case DT_INT16: { int16_t v; memcpy(&v, p, 2); return v; }
    case DT_UINT16: memcpy(&h, p, 2); return h;
    case DT_INT32: { int32_t v; memcpy(&v, p, 4); return v; }
    case DT_UINT32: { uint32_t v; memcpy(&v, p, 4); return v; }
    case DT_INT64: { int64_t v; memcpy(&v, p, 8); return (double)v; }
    case DT_UINT64: { uint64_t v; memcpy(&v, p, 8); return (double)v; }
    default: return 0.0;
    }
}

static const unsigned char *at(const aclTensor *t, int64_t elem) { /* kernel dtypes only */
    return (const unsigned char *)t->data + elem * (int64_t)aclTestDoubleTypeSize(t->dtype);
}

static double load(const aclTensor *t, int64_t elem) { return load_bytes(t->dtype, at(t, elem)); }

static double scalar(const aclScalar *s) { return load_bytes(s->dtype, s->bytes); } /* ToDouble */

/* The value as dtype d holds it (Cast to the kernel's dtype). */
static double round_to(double v, int d) {
    switch (d) {
    case DT_FLOAT: return (float)v;
    case DT_FLOAT16: return half_to_float(float_to_half(to_float_odd(v)));
    case DT_BF16: return bits_f((uint32_t)float_to_bf16(to_float_odd(v)) << 16);
    default: return v;
    }
}

/* Saturation mode: an overflow gives the dtype's largest finite value, NaN gives 0. */
static double saturate(double v, int d) {
    double max = d == DT_FLOAT ? 3.4028234663852886e38 : d == DT_FLOAT16 ? 65504.0
               : d == DT_BF16 ? 3.3895313892515355e38 : 0.0;
    if (max == 0.0) return v;
    if (isnan(v)) return 0.0;
    return v > max ? max : v < -max ? -max : v;
}

static void store(const aclTensor *t, int64_t elem, double v, int sat) {
    unsigned char *p = (unsigned char *)at(t, elem);
    uint16_t h;
    float f;
    if (sat) v = saturate(v, t->dtype);
    switch (t->dtype) {
    case DT_FLOAT: f = (float)v; memcpy(p, &f, 4); break;
    case DT_DOUBLE: memcpy(p, &v, 8); break;
    case DT_FLOAT16: h = float_to_half(to_float_odd(v)); memcpy(p, &h, 2); break;
    case DT_BF16: h = float_to_bf16(to_float_odd(v)); memcpy(p, &h, 2); break;
    case DT_COMPLEX64: { float c[2] = {(float)v, 0.0f}; memcpy(p, c, 8); break; }
    case DT_COMPLEX128: { double c[2] = {v, 0.0}; memcpy(p, c, 16); break; }
    default: break;
    }
}

/* -- shapes ------------------------------------------------------------------------------------ */

static int64_t numel(const aclTensor *t) {
    int64_t n = 1;
    for (uint64_t i = 0; i < t->ndim; i++) n *= t->dims[i];
    return n;
}

static int contiguous(const aclTensor *t) {
    int64_t acc = 1;
    if (t->offset) return 0;
    for (int64_t i = (int64_t)t->ndim - 1; i >= 0; i--) {
        if (t->dims[i] != 1 && t->strides[i] != acc) return 0;
        acc *= t->dims[i];
    }
    return 1;
}

static int same_shape(const aclTensor *a, const aclTensor *b) {
    if (a->ndim != b->ndim) return 0;
    for (uint64_t i = 0; i < a->ndim; i++)
        if (a->dims[i] != b->dims[i]) return 0;
    return 1;
}

/* numpy broadcast of a and b; then out must have exactly that shape */
static int broadcast_is(const aclTensor *a, const aclTensor *b, const aclTensor *out) {
    uint64_t r = a->ndim > b->ndim ? a->ndim : b->ndim;
    if (out->ndim != r) return 0;
    for (uint64_t i = 0; i < r; i++) {
        int64_t da = i < r - a->ndim ? 1 : a->dims[i - (r - a->ndim)];
        int64_t db = i < r - b->ndim ? 1 : b->dims[i - (r - b->ndim)];
        if (da != db && da != 1 && db != 1) return -1;
        if (out->dims[i] != (da == 1 ? db : da)) return 0;
    }
    return 1;
}

/* -- phase 1 helpers --------------------------------------------------------------------------- */

#define FAIL(code, ...) do { aclTestDoubleSetError(__VA_ARGS__); return code; } while (0)
#define NEED_T(t, name) do { if (!(t)) FAIL(ACLNN_ERR_PARAM_NULLPTR, \
    "%s: Expected a proper Tensor but got null for argument %s.", OP, name); \
    if ((t)->magic != TENSOR_MAGIC) FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s is not an aclTensor", OP, name); } while (0)
#define NEED_S(s, name) do { if (!(s)) FAIL(ACLNN_ERR_PARAM_NULLPTR, \
    "%s: Expected a value of type number for argument %s but instead found type null.", OP, name); \
    if ((s)->magic != SCALAR_MAGIC) FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s is not an aclScalar", OP, name); } while (0)
#define DTYPE(t, list, name) do { if (!in_list((t)->dtype, list)) FAIL(ACLNN_ERR_PARAM_INVALID, \
    "%s: %s dtype %d should be in the dtype support list", OP, name, (t)->dtype); } while (0)
#define RANK(t, name) do { if ((t)->ndim > 8) FAIL(ACLNN_ERR_PARAM_INVALID, \
    "%s: %s has %d dims, more than 8", OP, name, (int)(t)->ndim); } while (0)
#define PROLOGUE() do { aclTestDoubleBump(C_PHASE1, 1); \
    aclTestDoubleSleepEnv("ACLNN_TEST_DOUBLE_PHASE1_US"); if (!workspaceSize || !executor) \
    FAIL(ACLNN_ERR_PARAM_NULLPTR, "%s: workspaceSize or executor is null", OP); } while (0)

static int is_dir(const char *path) {
    struct stat st;
    return path && path[0] && stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Where the real library looks for kernels: $ASCEND_HOME_PATH/opp_latest, else $ASCEND_OPP_PATH. */
static int opp_found(void) {
    const char *home = getenv("ASCEND_HOME_PATH");
    char path[4096];
    if (home && snprintf(path, sizeof path, "%s/opp_latest", home) < (int)sizeof path && is_dir(path))
        return 1;
    return is_dir(getenv("ASCEND_OPP_PATH"));
}

static int finish(int op, int nothing, const aclTensor *a, const aclTensor *b, const aclTensor *out,
                  int kdt, uint64_t *workspaceSize, aclOpExecutor **executor, aclOpExecutor **made) {
    if (!nothing && !opp_found()) /* a kernel is needed: its package is found through the env */
        FAIL(ACLNN_ERR_INNER_OPP_PATH_NOT_FOUND, "Get opp kernel path failed: environment variable "
             "ASCEND_OPP_PATH is not set or not a directory");
    aclOpExecutor *e = calloc(1, sizeof *e);
    if (!e) FAIL(ACLNN_ERR_INNER, "out of memory");
    e->magic = EXECUTOR_MAGIC;
    e->op = op; e->nothing = nothing; e->a = a; e->b = b; e->out = out; e->kdt = kdt;
    if (!nothing && (!contiguous(a) || !contiguous(b))) /* room for contiguous fp32 copies */
        e->ws = (uint64_t)((4 * (numel(a) + numel(b)) + 31) / 32 * 32);
    *workspaceSize = e->ws;
    *executor = e;
    *made = e;
    aclTestDoubleBump(C_EXECUTORS_LIVE, 1);
    return ACLNN_SUCCESS;
}

/* -- the kernels (phase 2) --------------------------------------------------------------------- */

static double kernel(const aclOpExecutor *e, double gd, double xd) {
    float g = (float)gd, x = (float)xd, s1 = e->s1, s2 = e->s2, s3 = e->s3;
    switch (e->op) {
    case OP_LEAKY:
        if (e->kdt == DT_DOUBLE) return xd > 0 ? gd : gd * (double)s1;
        return x > 0 ? g : g * s1;
    case OP_HARDSHRINK:
        return fabsf(x) <= s1 ? 0.0f : g;
    case OP_SOFTPLUS: {
        float t1 = s1 * x;
        return t1 > s2 ? g : g / (1.0f + expf(-t1));
    }
    case OP_GELU:
        if (!e->flag) /* approximate = "none" */
            return g * (0.5f + 0.5f * erff(x * 0.707106781f) + x * 0.3989422804f * expf(-0.5f * x * x));
        else {
            float px = expf(x * (-1.595769121605730711759f + -0.0713548162726002527220f * x * x));
            float res0 = x * (1.5957691216f + 0.2140644488178007f * x * x);
            float t = 1.0f / (1.0f + px);
            float resp = px * res0 * t * t;
            if (isnan(resp)) resp = 0.0f;
            return g * (resp + t);
        }
    case OP_SCALE_SHIFT: /* flag mode, d1 alpha, d2 shift: computed in double, rounded once */
        return e->flag ? xd * e->d1 + e->d2 : xd + e->d1 + e->d2;
    case OP_LIST_ECHO:
        return xd;
    case OP_WEIGHTED_HYPOT: /* a self, b weightOptional; flag: it was null (a tensor of 2s) */
        return hypot(gd, e->flag ? 2.0 : xd);
    case OP_SWISH: /* s1 beta (1.0 for a null betaOptional); a and b are both self */
        return x / (1.0f + expf(-s1 * x));
    case OP_ELU: { /* s1 alpha, s2 scale, s3 inputScale, flag isResult */
        float negcoef = s1 * s2;
        if (!(x <= 0)) return g * s2;
        return e->flag ? (g * s3) * (x + negcoef) : ((g * s3) * negcoef) * expf(x * s3);
    }
    }
    return NAN;
}

static void compute(const aclOpExecutor *e) {
    const aclTensor *o = e->out, *a = e->a, *b = e->b;
    int64_t n = numel(o), idx[MAX_DIMS] = {0};
    int r = (int)o->ndim, ra = r - (int)a->ndim, rb = r - (int)b->ndim;
    for (int64_t k = 0; k < n; k++) {
        int64_t oo = o->offset, ao = a->offset, bo = b->offset;
        for (int d = 0; d < r; d++) {
            oo += idx[d] * o->strides[d];
            if (d >= ra && a->dims[d - ra] != 1) ao += idx[d] * a->strides[d - ra];
            if (d >= rb && b->dims[d - rb] != 1) bo += idx[d] * b->strides[d - rb];
        }
        store(o, oo, round_to(kernel(e, load(a, ao), load(b, bo)), e->kdt), e->saturate);
        for (int d = r - 1; d >= 0; d--) {
            if (++idx[d] < o->dims[d]) break;
            idx[d] = 0;
        }
    }
}

/* 1 when the tensor's storage lives on device dev (or has no bytes) */
static int on_device(const aclTensor *t, int dev) {
    return aclTestDoubleShapeBytes(t->dtype, t->storage_numel) == 0 ||
           aclTestDoubleDeviceOf(t->data) == dev;
}

static int run(int op, const char *OP, void *workspace, uint64_t size, aclOpExecutor *e, void *stream) {
    aclTestDoubleBump(C_PHASE2, 1);
    if (!e) FAIL(ACLNN_ERR_PARAM_NULLPTR, "%s: executor is null", OP);
    if (e->magic != EXECUTOR_MAGIC) FAIL(ACLNN_ERR_PARAM_INVALID, "%s: the executor is not live", OP);
    int rc = ACLNN_SUCCESS, launched, dev = aclnnTestDoubleCurrentDevice();
    if (e->op != op) {
        aclTestDoubleSetError("%s: the executor belongs to another operator", OP);
        rc = ACLNN_ERR_PARAM_INVALID;
    } else if (!aclTestDoubleIsStream(stream)) {
        aclTestDoubleSetError("%s: stream %p is not a live stream", OP, stream);
        rc = ACLNN_ERR_PARAM_INVALID;
    } else if (size != e->ws || (e->ws && !aclTestDoubleDeviceRange(workspace, e->ws))) {
        aclTestDoubleSetError("%s: workspace of %llu bytes at %p, phase 1 asked for %llu", OP,
                              (unsigned long long)size, workspace, (unsigned long long)e->ws);
        rc = ACLNN_ERR_PARAM_INVALID;
    } else if (dev >= 0 && (!on_device(e->a, dev) || !on_device(e->b, dev) || !on_device(e->out, dev) ||
                            (e->ws && aclTestDoubleDeviceOf(workspace) != dev))) {
        aclTestDoubleSetError("%s: a tensor or the workspace is not in device %d's memory", OP, dev);
        rc = ACLNN_ERR_RUNTIME_ERROR;
    } else if ((launched = aclTestDoubleLaunch(stream, &e->saturate)) > 1) {
        rc = ACLNN_ERR_RUNTIME_ERROR; /* the runtime said why */
    } else {
        if (e->ws) {
            memset(workspace, 0, e->ws);
            aclTestDoubleBump(C_WORKSPACE_RUNS, 1);
        }
        if (!e->nothing && !launched) compute(e); /* launched == 1: it faults or hangs */
        /* injected bug: the kernel also writes its second input (self / selfOrResult) */
        if (!e->nothing && !launched && getenv("ACLNN_TEST_DOUBLE_WRITES_INPUT") && numel(e->b))
            store(e->b, e->b->offset, -12345.0, 0);
    }
    e->magic = 0;
    free(e); /* an executor runs once */
    aclTestDoubleBump(C_EXECUTORS_LIVE, -1);
    return rc;
}

/* -- the five operators ------------------------------------------------------------------------ */

int aclnnLeakyReluBackwardGetWorkspaceSize(const aclTensor *gradOutput, const aclTensor *self,
    const aclScalar *negativeSlope, bool selfIsResult, aclTensor *out, uint64_t *workspaceSize,
    aclOpExecutor **executor) {
    const char *OP = "aclnnLeakyReluBackward";
    aclOpExecutor *e;
    PROLOGUE();
    NEED_T(gradOutput, "gradOutput"); NEED_T(self, "self");
    NEED_S(negativeSlope, "negativeSlope"); NEED_T(out, "out");
    DTYPE(gradOutput, FLOAT4, "gradOutput"); DTYPE(self, FLOAT4, "self");
    DTYPE(negativeSlope, SLOPE, "negativeSlope");
    RANK(gradOutput, "gradOutput"); RANK(self, "self");
    int bc = broadcast_is(gradOutput, self, out);
    if (bc < 0) FAIL(ACLNN_ERR_PARAM_INVALID, "%s: gradOutput and self do not broadcast", OP);
    if (bc == 0) FAIL(ACLNN_ERR_PARAM_INVALID, "%s: out shape is not the broadcast shape", OP);
    double slope = scalar(negativeSlope);
    if (selfIsResult && slope < 0.0)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: In-place leakyRelu backward calculation is triggered "
             "with a negativeSlope which is not supported.", OP);
    int p = promote(gradOutput->dtype, self->dtype);
    if (p == UNDEF || !can_write(p, out->dtype))
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: promoted dtype %d cannot be cast to out dtype %d", OP, p, out->dtype);
    int rc = finish(OP_LEAKY, numel(self) == 0, gradOutput, self, out, p, workspaceSize, executor, &e);
    if (rc == 0) e->s1 = (float)slope;
    return rc;
}

int aclnnLeakyReluBackward(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, void *stream) {
    return run(OP_LEAKY, "aclnnLeakyReluBackward", workspace, workspaceSize, executor, stream);
}

int aclnnHardshrinkBackwardGetWorkspaceSize(const aclTensor *gradOutput, const aclTensor *self,
    const aclScalar *lambd, aclTensor *gradInput, uint64_t *workspaceSize, aclOpExecutor **executor) {
    const char *OP = "aclnnHardshrinkBackward";
    aclOpExecutor *e;
    PROLOGUE();
    NEED_T(gradOutput, "gradOutput"); NEED_T(self, "self");
    NEED_S(lambd, "lambd"); NEED_T(gradInput, "gradInput");
    DTYPE(gradOutput, FLOAT3, "gradOutput"); DTYPE(self, FLOAT3, "self");
    DTYPE(gradInput, FLOAT3, "gradInput"); /* lambd's dtype is not checked (facts 3.1) */
    RANK(gradOutput, "gradOutput"); RANK(self, "self"); RANK(gradInput, "gradInput");
    int p = promote(gradOutput->dtype, self->dtype);
    if (!in_list(p, FLOAT3) || !can_write(p, gradInput->dtype))
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: promoted dtype %d is not supported or cannot be cast", OP, p);
    int nothing = numel(gradOutput) == 0 || numel(self) == 0; /* before the broadcast check */
    if (!nothing && broadcast_is(gradOutput, self, gradInput) != 1)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: shapes do not broadcast to gradInput's shape", OP);
    int rc = finish(OP_HARDSHRINK, nothing, gradOutput, self, gradInput, p, workspaceSize, executor, &e);
    if (rc == 0) {
        float lam = (float)scalar(lambd);
        e->s1 = lam < 0 ? 0.0f : lam;
    }
    return rc;
}

int aclnnHardshrinkBackward(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, void *stream) {
    return run(OP_HARDSHRINK, "aclnnHardshrinkBackward", workspace, workspaceSize, executor, stream);
}

int aclnnSoftplusBackwardGetWorkspaceSize(const aclTensor *gradOutput, const aclTensor *self,
    const aclScalar *beta, const aclScalar *threshold, aclTensor *gradInput,
    uint64_t *workspaceSize, aclOpExecutor **executor) {
    const char *OP = "aclnnSoftplusBackward";
    aclOpExecutor *e;
    PROLOGUE();
    NEED_T(gradOutput, "gradOutput"); NEED_T(self, "self"); NEED_T(gradInput, "gradInput");
    DTYPE(gradOutput, FLOAT4, "gradOutput"); DTYPE(self, SOFTPLUS_SELF, "self");
    DTYPE(gradInput, FLOAT4, "gradInput");
    RANK(gradOutput, "gradOutput"); RANK(self, "self"); RANK(gradInput, "gradInput");
    if (!same_shape(self, gradOutput) || !same_shape(self, gradInput))
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: gradOutput, self and gradInput shapes differ", OP);
    int nothing = numel(gradOutput) == 0 || numel(self) == 0 || numel(gradInput) == 0;
    /* The real library dereferences a null beta/threshold (facts 4.1); the double refuses. */
    if (!nothing) { NEED_S(beta, "beta"); NEED_S(threshold, "threshold"); }
    int g = gradOutput->dtype, x = self->dtype;
    int kdt = (!in_list(g, FLOAT3) || !in_list(x, FLOAT3) || g != x) ? DT_FLOAT : g;
    int rc = finish(OP_SOFTPLUS, nothing, gradOutput, self, gradInput, kdt, workspaceSize, executor, &e);
    if (rc == 0 && !nothing) {
        e->s1 = (float)scalar(beta);
        e->s2 = (float)scalar(threshold);
    }
    return rc;
}

int aclnnSoftplusBackward(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, void *stream) {
    return run(OP_SOFTPLUS, "aclnnSoftplusBackward", workspace, workspaceSize, executor, stream);
}

int aclnnGeluBackwardV2GetWorkspaceSize(const aclTensor *gradOutput, const aclTensor *self,
    char *approximate, aclTensor *gradInput, uint64_t *workspaceSize, aclOpExecutor **executor) {
    const char *OP = "aclnnGeluBackwardV2";
    aclOpExecutor *e;
    PROLOGUE();
    NEED_T(gradOutput, "gradOutput"); NEED_T(self, "self"); NEED_T(gradInput, "gradInput");
    if (!approximate)
        FAIL(ACLNN_ERR_PARAM_NULLPTR, "%s: approximate only supports to set none or tanh, but got null.", OP);
    int p = promote(gradOutput->dtype, self->dtype);
    if (!in_list(p, FLOAT3))
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: promoted dtype %d is not supported", OP, p);
    if (gradInput->dtype != p)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: gradInput dtype must be the promoted dtype %d", OP, p);
    if (broadcast_is(gradOutput, self, gradInput) != 1) /* no rank check (facts 5.1) */
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: shapes do not broadcast to gradInput's shape", OP);
    int tanh_mode = strcmp(approximate, "tanh") == 0;
    if (!tanh_mode && strcmp(approximate, "none") != 0)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: approximate only supports none or tanh, got %s", OP, approximate);
    int nothing = numel(gradOutput) == 0 || numel(self) == 0;
    int rc = finish(OP_GELU, nothing, gradOutput, self, gradInput, p, workspaceSize, executor, &e);
    if (rc == 0) e->flag = tanh_mode;
    return rc;
}

int aclnnGeluBackwardV2(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, void *stream) {
    return run(OP_GELU, "aclnnGeluBackwardV2", workspace, workspaceSize, executor, stream);
}

int aclnnEluBackwardGetWorkspaceSize(const aclTensor *gradOutput, const aclScalar *alpha,
    const aclScalar *scale, const aclScalar *inputScale, bool isResult, const aclTensor *selfOrResult,
    aclTensor *gradInput, uint64_t *workspaceSize, aclOpExecutor **executor) {
    const char *OP = "aclnnEluBackward";
    aclOpExecutor *e;
    PROLOGUE();
    NEED_T(gradOutput, "gradOutput"); NEED_S(alpha, "alpha"); NEED_S(scale, "scale");
    NEED_S(inputScale, "inputScale"); NEED_T(selfOrResult, "selfOrResult"); NEED_T(gradInput, "gradInput");
    if (gradOutput->dtype != selfOrResult->dtype)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: gradOutput and selfOrResult dtypes differ", OP);
    DTYPE(gradOutput, FLOAT3, "gradOutput");
    if (is_complex(alpha->dtype) || is_complex(scale->dtype) || is_complex(inputScale->dtype))
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: alpha, scale and inputScale must be castable to FLOAT", OP);
    if (!can_write(gradOutput->dtype, gradInput->dtype))
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: gradOutput dtype cannot be cast to gradInput dtype", OP);
    if (!same_shape(selfOrResult, gradOutput) || !same_shape(gradInput, gradOutput))
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: selfOrResult and gradInput must have gradOutput's shape", OP);
    RANK(gradOutput, "gradOutput");
    float a = (float)scalar(alpha);
    if (isResult && a < 0)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: In-place elu backward calculation is triggered with a "
             "negative slope which is not supported.", OP);
    int rc = finish(OP_ELU, numel(gradOutput) == 0, gradOutput, selfOrResult, gradInput,
                    gradOutput->dtype, workspaceSize, executor, &e);
    if (rc == 0) {
        e->s1 = a;
        e->s2 = (float)scalar(scale);
        e->s3 = (float)scalar(inputScale);
        e->flag = isResult;
    }
    return rc;
}

int aclnnEluBackward(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, void *stream) {
    return run(OP_ELU, "aclnnEluBackward", workspace, workspaceSize, executor, stream);
}

/* aclnnSwish: a nullable scalar. op_api aclnn_swish.cpp: "float scale = 1.0f; if (betaOptional !=
 * nullptr) scale = betaOptional->ToFloat()", and the dtype of beta is tested only when it is not
 * null (CanCast to FLOAT: a complex beta is refused). self is passed as both kernel inputs. */
int aclnnSwishGetWorkspaceSize(const aclTensor *self, const aclScalar *betaOptional, aclTensor *out,
    uint64_t *workspaceSize, aclOpExecutor **executor) {
    const char *OP = "aclnnSwish";
    aclOpExecutor *e;
    PROLOGUE();
    NEED_T(self, "self"); NEED_T(out, "out");
    DTYPE(self, FLOAT3, "self"); DTYPE(out, FLOAT3, "out");
    if (self->dtype != out->dtype)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: self and out dtypes differ", OP);
    if (betaOptional && betaOptional->magic != SCALAR_MAGIC)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: betaOptional is not an aclScalar", OP);
    if (betaOptional && (betaOptional->dtype == DT_COMPLEX64 || betaOptional->dtype == DT_COMPLEX128))
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: betaOptional dtype %d cannot cast to FLOAT", OP,
             betaOptional->dtype);
    RANK(self, "self"); RANK(out, "out");
    if (!same_shape(self, out)) FAIL(ACLNN_ERR_PARAM_INVALID, "%s: self and out shapes differ", OP);
    int nothing = numel(self) == 0 || numel(out) == 0;
    int rc = finish(OP_SWISH, nothing, self, self, out, DT_FLOAT, workspaceSize, executor, &e);
    if (rc == 0) e->s1 = betaOptional ? (float)scalar(betaOptional) : 1.0f;
    return rc;
}

int aclnnSwish(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, void *stream) {
    return run(OP_SWISH, "aclnnSwish", workspace, workspaceSize, executor, stream);
}

/* aclnnScaleShift: the made-up op of tests/data/params/scale_shift.yaml, for the parameter kinds
 * passed by value (int64_t mode and shift, double alpha) and as arrays (aclIntArray dims,
 * aclFloatArray weights, aclBoolArray flags), which only the checks read; the double records
 * what it received (aclnnTestDoubleLastArgs) so that a test can see the values cross intact. */
static char last_args[4096];

const char *aclnnTestDoubleLastArgs(void) { return last_args; }

static const int FLOAT2[] = {DT_FLOAT, DT_FLOAT16, UNDEF};

int aclnnScaleShiftGetWorkspaceSize(const aclTensor *self, const aclTensor *biasOptional,
    int64_t mode, double alpha,
    int64_t shift, const aclIntArray *dims, const aclFloatArray *weights, const aclBoolArray *flags,
    aclTensor *out, uint64_t *workspaceSize, aclOpExecutor **executor) {
    const char *OP = "aclnnScaleShift";
    aclOpExecutor *e;
    PROLOGUE();
    NEED_T(self, "self");
    if (!dims || !weights || !flags)
        FAIL(ACLNN_ERR_PARAM_NULLPTR, "%s: dims, weights or flags is null", OP);
    NEED_T(out, "out");
    if (dims->magic != INTARRAY_MAGIC || weights->magic != FLOATARRAY_MAGIC ||
        flags->magic != BOOLARRAY_MAGIC)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: dims, weights or flags is not an array of its type", OP);
    int n = snprintf(last_args, sizeof last_args, "mode=%lld alpha=%.17g shift=%lld dims=",
                     (long long)mode, alpha, (long long)shift);
    for (uint64_t i = 0; i < dims->size && n < 3800; i++)
        n += snprintf(last_args + n, sizeof last_args - n, "%s%lld", i ? "," : "", (long long)dims->v[i]);
    n += snprintf(last_args + n, sizeof last_args - n, " weights=");
    for (uint64_t i = 0; i < weights->size && n < 3900; i++)
        n += snprintf(last_args + n, sizeof last_args - n, "%s%.9g", i ? "," : "", weights->v[i]);
    n += snprintf(last_args + n, sizeof last_args - n, " flags=");
    for (uint64_t i = 0; i < flags->size && n < 4000; i++)
        n += snprintf(last_args + n, sizeof last_args - n, "%d", flags->v[i] ? 1 : 0);
    if (biasOptional && biasOptional->magic != TENSOR_MAGIC)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: biasOptional is not an aclTensor", OP);
    n += snprintf(last_args + n, sizeof last_args - n, " bias=%s", biasOptional ? "tensor" : "null");
    DTYPE(self, FLOAT2, "self");
    if (biasOptional) DTYPE(biasOptional, FLOAT2, "biasOptional");
    DTYPE(out, FLOAT2, "out");
    if (mode < 0 || mode > 1) FAIL(ACLNN_ERR_PARAM_INVALID, "%s: mode %lld is not 0 or 1", OP, (long long)mode);
    if (!(alpha >= -100 && alpha <= 100)) FAIL(ACLNN_ERR_PARAM_INVALID, "%s: alpha out of range", OP);
    if (!same_shape(self, out) || (biasOptional && !same_shape(self, biasOptional)))
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: self, biasOptional and out shapes differ", OP);
    int nothing = numel(self) == 0;
    int rc = finish(OP_SCALE_SHIFT, nothing, self, self, out, out->dtype, workspaceSize, executor, &e);
    if (rc == 0) { e->flag = (int)mode; e->d1 = alpha; e->d2 = (double)shift; }
    return rc;
}

int aclnnScaleShift(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, void *stream) {
    return run(OP_SCALE_SHIFT, "aclnnScaleShift", workspace, workspaceSize, executor, stream);
}

/* aclnnScaleFloat: the made-up op of tests/data/params/scale_float.yaml, a C float by value (a
 * prototype's `float beta`, not the float kind's double): out = self * alpha, alpha the float the
 * caller passed; a caller that passes a double here hands over other bits (recorded as well). */
int aclnnScaleFloatGetWorkspaceSize(const aclTensor *self, float alpha, aclTensor *out,
    uint64_t *workspaceSize, aclOpExecutor **executor) {
    const char *OP = "aclnnScaleFloat";
    aclOpExecutor *e;
    PROLOGUE();
    NEED_T(self, "self");
    NEED_T(out, "out");
    snprintf(last_args, sizeof last_args, "alpha=%.17g", (double)alpha);
    DTYPE(self, FLOAT2, "self");
    DTYPE(out, FLOAT2, "out");
    if (!same_shape(self, out)) FAIL(ACLNN_ERR_PARAM_INVALID, "%s: self and out shapes differ", OP);
    int rc = finish(OP_SCALE_SHIFT, numel(self) == 0, self, self, out, out->dtype, workspaceSize,
                    executor, &e);
    if (rc == 0) { e->flag = 1; e->d1 = (double)alpha; e->d2 = 0.0; }
    return rc;
}

int aclnnScaleFloat(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, void *stream) {
    return run(OP_SCALE_SHIFT, "aclnnScaleFloat", workspace, workspaceSize, executor, stream);
}

/* aclnnListEcho: the made-up op of tests/data/params/list_echo.yaml: out = self, with an
 * aclTensorList and an aclScalarList passed along; what arrived is recorded in last_args. */
int aclnnListEchoGetWorkspaceSize(const aclTensor *self, const aclTensorList *tensors,
    const aclScalarList *scales, aclTensor *out, uint64_t *workspaceSize, aclOpExecutor **executor) {
    const char *OP = "aclnnListEcho";
    aclOpExecutor *e;
    PROLOGUE();
    NEED_T(self, "self");
    if (!tensors || !scales) FAIL(ACLNN_ERR_PARAM_NULLPTR, "%s: tensors or scales is null", OP);
    NEED_T(out, "out");
    if (tensors->magic != TENSORLIST_MAGIC || scales->magic != SCALARLIST_MAGIC)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: tensors or scales is not a list of its type", OP);
    int n = snprintf(last_args, sizeof last_args, "tensors=%llu", (unsigned long long)tensors->size);
    for (uint64_t i = 0; i < tensors->size && n < 3500; i++) {
        const aclTensor *t = tensors->v[i];
        if (!t || t->magic != TENSOR_MAGIC) FAIL(ACLNN_ERR_PARAM_INVALID, "%s: tensors[%llu] is not a tensor", OP, (unsigned long long)i);
        n += snprintf(last_args + n, sizeof last_args - n, " [");
        for (uint64_t d = 0; d < t->ndim; d++)
            n += snprintf(last_args + n, sizeof last_args - n, "%s%lld", d ? "x" : "", (long long)t->dims[d]);
        n += snprintf(last_args + n, sizeof last_args - n, "]:%g", numel(t) ? load(t, t->offset) : 0.0);
    }
    n += snprintf(last_args + n, sizeof last_args - n, " scales=%llu", (unsigned long long)scales->size);
    for (uint64_t i = 0; i < scales->size && n < 4000; i++) {
        const aclScalar *sc = scales->v[i];
        if (!sc || sc->magic != SCALAR_MAGIC) FAIL(ACLNN_ERR_PARAM_INVALID, "%s: scales[%llu] is not a scalar", OP, (unsigned long long)i);
        n += snprintf(last_args + n, sizeof last_args - n, " %g", scalar(sc));
    }
    DTYPE(self, FLOAT2, "self"); DTYPE(out, FLOAT2, "out");
    if (self->dtype != DT_FLOAT || out->dtype != DT_FLOAT) FAIL(ACLNN_ERR_PARAM_INVALID, "%s: FLOAT only", OP);
    if (!same_shape(self, out)) FAIL(ACLNN_ERR_PARAM_INVALID, "%s: self and out shapes differ", OP);
    return finish(OP_LIST_ECHO, numel(self) == 0, self, self, out, DT_FLOAT, workspaceSize, executor, &e);
}

int aclnnListEcho(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, void *stream) {
    return run(OP_LIST_ECHO, "aclnnListEcho", workspace, workspaceSize, executor, stream);
}

/* aclnnWeightedHypot: the made-up op of tests/data/nulldef/weighted_hypot.yaml: out =
 * sqrt(self^2 + weightOptional^2) in double, rounded once; a null weightOptional stands for a
 * tensor of 2s (like op_api aclnn_binary_cross_entropy_backward.cpp's OnesLike for a null weight),
 * and only a non-null weightOptional is checked. */
int aclnnWeightedHypotGetWorkspaceSize(const aclTensor *self, const aclTensor *weightOptional,
    aclTensor *out, uint64_t *workspaceSize, aclOpExecutor **executor) {
    const char *OP = "aclnnWeightedHypot";
    aclOpExecutor *e;
    PROLOGUE();
    NEED_T(self, "self"); NEED_T(out, "out");
    if (weightOptional && weightOptional->magic != TENSOR_MAGIC)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: weightOptional is not an aclTensor", OP);
    snprintf(last_args, sizeof last_args, "weight=%s", weightOptional ? "tensor" : "null");
    DTYPE(self, FLOAT2, "self"); DTYPE(out, FLOAT2, "out");
    if (weightOptional) DTYPE(weightOptional, FLOAT2, "weightOptional");
    if (!same_shape(out, self)) FAIL(ACLNN_ERR_PARAM_INVALID, "%s: out and self shapes differ", OP);
    if (weightOptional && broadcast_is(self, weightOptional, self) != 1)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: weightOptional does not broadcast to self", OP);
    int rc = finish(OP_WEIGHTED_HYPOT, numel(self) == 0, self, weightOptional ? weightOptional : self,
                    out, out->dtype, workspaceSize, executor, &e);
    if (rc == 0) e->flag = weightOptional == NULL;
    return rc;
}

int aclnnWeightedHypot(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, void *stream) {
    return run(OP_WEIGHTED_HYPOT, "aclnnWeightedHypot", workspace, workspaceSize, executor, stream);
}
