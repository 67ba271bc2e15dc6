#include "format/program_view.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ptorun/pto_runtime_c_api.h"

__attribute__((format(printf, 3, 4))) static int why_fail(char *why, size_t size, const char *fmt, ...)
{
    if (why != NULL && size > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, size, fmt, ap);
        va_end(ap);
    }
    return -1;
}

int pto_affine_malformed(const PtoAffine *a)
{
    if ((a->clamp & ~(PTO_AFFINE_HAS_LO | PTO_AFFINE_HAS_HI)) != 0 || a->reserved != 0)
        return 1;
    if ((a->clamp & PTO_AFFINE_HAS_LO) == 0 && a->lo != 0)
        return 1;
    if ((a->clamp & PTO_AFFINE_HAS_HI) == 0 && a->hi != 0)
        return 1;
    return a->clamp == (PTO_AFFINE_HAS_LO | PTO_AFFINE_HAS_HI) && a->lo > a->hi;
}

int pto_affine_eval(const PtoAffine *a, const int64_t *vars, uint32_t depth, int64_t *out)
{
    int64_t v = a->base;
    for (uint32_t d = 0; d < PTO_PROGRAM_MAX_LOOP_DEPTH; d++) {
        if (a->coef[d] == 0)
            continue;
        if (d >= depth)
            return -1;
        int64_t term;
        if (__builtin_mul_overflow(a->coef[d], vars[d], &term) || __builtin_add_overflow(v, term, &v))
            return -1;
    }
    if ((a->clamp & PTO_AFFINE_HAS_LO) != 0 && v < a->lo)
        v = a->lo;
    if ((a->clamp & PTO_AFFINE_HAS_HI) != 0 && v > a->hi)
        v = a->hi;
    *out = v;
    return 0;
}

static int affine_is_zero(const PtoAffine *a)
{
    static const PtoAffine zero;
    return memcmp(a, &zero, sizeof zero) == 0;
}

int pto_view_param_check(const PtoProgramParam *p, char *why, size_t why_size)
{
    if (p->ndims == 0 || p->ndims > PTO_VIEW_MAX_DIMS)
        return why_fail(why, why_size, "a strided view has 1..%u dims, not %u", PTO_VIEW_MAX_DIMS, p->ndims);
    if (pto_dtype_bytes(p->dtype) == 0)
        return why_fail(why, why_size, "dtype %u is not a PtoDataType", p->dtype);
    if (pto_affine_malformed(&p->offset))
        return why_fail(why, why_size, "the view origin has a malformed clamp");
    if (!affine_is_zero(&p->size))
        return why_fail(why, why_size, "a strided view leaves the flat size zero");
    for (uint32_t d = 0; d < PTO_VIEW_MAX_DIMS; d++) {
        const PtoViewDim *dim = &p->dims[d];
        if (d >= p->ndims) {
            static const PtoViewDim zero;
            if (memcmp(dim, &zero, sizeof zero) != 0)
                return why_fail(why, why_size, "dim %u is beyond ndims %u but not zero", d, p->ndims);
            continue;
        }
        if (dim->stride < 0 || dim->bound < 0)
            return why_fail(why, why_size, "dim %u has stride %lld and bound %lld; both must be >= 0", d,
                            (long long)dim->stride, (long long)dim->bound);
        if ((dim->flags & ~PTO_VIEW_DIM_SELECTED) != 0 || dim->reserved != 0)
            return why_fail(why, why_size, "dim %u has unknown flags 0x%x", d, dim->flags);
        if ((dim->flags & PTO_VIEW_DIM_SELECTED) != 0 && !affine_is_zero(&dim->extent))
            return why_fail(why, why_size, "dim %u is SELECTED (extent 1) but carries an extent", d);
        if (pto_affine_malformed(&dim->offset) || pto_affine_malformed(&dim->extent))
            return why_fail(why, why_size, "dim %u has a malformed clamp", d);
    }
    return 0;
}

int pto_view_param_resolve(const PtoProgramParam *p, const int64_t *vars, uint32_t depth, uint64_t tensor_addr,
                           uint64_t tensor_bytes, PtoTensorView *view, uint64_t *span, char *why, size_t why_size)
{
    int64_t origin;
    if (pto_affine_eval(&p->offset, vars, depth, &origin) != 0)
        return why_fail(why, why_size, "the view origin overflows");
    if (origin < 0)
        return why_fail(why, why_size, "the view origin is element %lld", (long long)origin);
    memset(view, 0, sizeof *view);
    view->dtype = p->dtype;
    /* first and last element (as offsets from the tensor start), in 128 bits: no overflow */
    __int128 first = origin, last = origin;
    int empty = 0;
    for (uint32_t d = 0; d < p->ndims; d++) {
        const PtoViewDim *dim = &p->dims[d];
        int selected = (dim->flags & PTO_VIEW_DIM_SELECTED) != 0;
        int64_t off, ext = 1;
        if (pto_affine_eval(&dim->offset, vars, depth, &off) != 0 ||
            (!selected && pto_affine_eval(&dim->extent, vars, depth, &ext) != 0))
            return why_fail(why, why_size, "dim %u's offset or extent overflows", d);
        if (off < 0 || ext < 0 || (__int128)off + ext > dim->bound)
            return why_fail(why, why_size, "dim %u: elements [%lld, %lld + %lld) leave its bound of %lld", d,
                            (long long)off, (long long)off, (long long)ext, (long long)dim->bound);
        first += (__int128)off * dim->stride;
        if (ext == 0)
            empty = 1;
        else
            last += ((__int128)off + ext - 1) * dim->stride;
        /* each term is below 2^126: checked after each, the sums never overflow */
        if (first > PTO_VIEW_REACH_LIMIT || last > PTO_VIEW_REACH_LIMIT)
            return why_fail(why, why_size, "it reaches past element 2^100 of its tensor");
        if (!selected) {
            view->shape[view->ndims] = (uint64_t)ext;
            view->strides[view->ndims] = (uint64_t)dim->stride;
            view->ndims++;
        }
    }
    if (view->ndims == 0) { /* every dim selected: one element */
        view->shape[0] = 1;
        view->strides[0] = 1;
        view->ndims = 1;
    }
    uint32_t esize = pto_dtype_bytes(p->dtype);
    __int128 first_byte = first * esize, end_byte = (last + 1) * esize;
    if (!empty && end_byte > (__int128)tensor_bytes) {
        if (end_byte > (__int128)INT64_MAX)
            return why_fail(why, why_size, "its last element ends past byte 2^63 of a %llu-byte tensor",
                            (unsigned long long)tensor_bytes);
        return why_fail(why, why_size, "its last element ends at byte %lld of a %llu-byte tensor", (long long)end_byte,
                        (unsigned long long)tensor_bytes);
    }
    if (first_byte > (__int128)tensor_bytes)
        return why_fail(why, why_size, "its origin lies past byte %llu of a %llu-byte tensor",
                        (unsigned long long)tensor_bytes, (unsigned long long)tensor_bytes);
    if ((__int128)tensor_addr + first_byte > (__int128)UINT64_MAX)
        return why_fail(why, why_size, "its address wraps around");
    view->addr = tensor_addr + (uint64_t)first_byte;
    *span = empty ? 0 : (uint64_t)(end_byte - first_byte);
    return 0;
}

void pto_loop_values_text(const int64_t *vars, uint32_t depth, char *buf, size_t size)
{
    if (size == 0)
        return;
    buf[0] = '\0';
    if (depth == 0) {
        snprintf(buf, size, "outside any loop");
        return;
    }
    size_t used = 0;
    for (uint32_t d = 0; d < depth && used < size; d++) {
        int n = snprintf(buf + used, size - used, "%si%u=%lld", d == 0 ? "" : ", ", d, (long long)vars[d]);
        if (n < 0)
            return;
        used += (size_t)n;
    }
}
