/* heads.c: head sharing and cu_seqlens rules (see heads.h). */
#include <flashlab/heads.h>

fl_status fl_heads_check(int64_t Hq, int64_t Hkv)
{
    if (Hq < 1) return fl_fail(FL_EINVAL, "{heads}: the number of query heads must be >= 1 (got %lld)", (long long)Hq);
    if (Hkv < 1)
        return fl_fail(FL_EINVAL, "{kv_heads}: the number of key/value heads must be >= 1 (got %lld)", (long long)Hkv);
    if (Hq % Hkv)
        return fl_fail(FL_EINVAL,
                       "{kv_heads}: %lld key/value heads must divide the %lld query heads "
                       "(query head h uses K/V head h / (Hq/Hkv))",
                       (long long)Hkv, (long long)Hq);
    return FL_OK;
}

int64_t fl_kv_head(int64_t h, int64_t Hq, int64_t Hkv)
{
    if (Hkv < 1 || Hq < Hkv || Hq % Hkv || h < 0 || h >= Hq) return -1; /* no such mapping */
    return h / (Hq / Hkv);
}

fl_status fl_cu_seqlens_check(const char *opt, const int64_t *cu, int64_t n, int64_t batch,
                              int64_t total)
{
    if (batch < 1 || batch >= INT64_MAX - 1)
        return fl_fail(FL_EINVAL, "%s: the batch must be >= 1 (got %lld)", opt, (long long)batch);
    if (n != batch + 1)
        return fl_fail(FL_EINVAL, "%s: needs batch + 1 = %lld entries, got %lld", opt,
                       (long long)(batch + 1), (long long)n);
    if (cu[0] != 0) return fl_fail(FL_EINVAL, "%s: must start at 0 (entry 0 is %lld)", opt, (long long)cu[0]);
    for (int64_t b = 1; b < n; b++)
        if (cu[b] < cu[b - 1])
            return fl_fail(FL_EINVAL, "%s: must be nondecreasing (entry %lld = %lld < entry %lld = %lld)",
                           opt, (long long)b, (long long)cu[b], (long long)(b - 1), (long long)cu[b - 1]);
    if (cu[n - 1] != total)
        return fl_fail(FL_EINVAL, "%s: must end at the packed token count %lld (last entry is %lld)", opt,
                       (long long)total, (long long)cu[n - 1]);
    return FL_OK;
}
