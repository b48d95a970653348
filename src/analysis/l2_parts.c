/* l2_parts.c: the partitioned L2 of l2_parts.h, on top of the LRU caches of l2.h. */
#include <flashlab/l2_parts.h>

#include <stdlib.h>

#include <flashlab/l2.h>

struct fl_l2p {
    int parts, shift;
    int64_t sector;
    fl_l2 *p[2];
    fl_l2p_stats st;
};

static fl_status check_parts(int parts)
{
    if (parts != 1 && parts != 2)
        return fl_fail(FL_EINVAL, "{l2_partitions}: 1 (one LRU) or 2 (the H100's and H200's two halves), got %d", parts);
    return FL_OK;
}

fl_status fl_l2p_memory(int64_t capacity, int64_t sector, int parts, int64_t *bytes)
{
    FL_TRY(check_parts(parts));
    int64_t one;
    FL_TRY(fl_l2_memory(capacity / parts, sector, &one));
    *bytes = (int64_t)sizeof(fl_l2p) + parts * one;
    return FL_OK;
}

fl_status fl_l2p_alloc(int64_t capacity, int64_t sector, int parts, fl_l2p **out)
{
    *out = NULL;
    FL_TRY(check_parts(parts));
    fl_l2p *c = calloc(1, sizeof *c);
    if (!c) return fl_fail(FL_ENOMEM, "l2: out of memory");
    c->parts = parts, c->sector = sector;
    for (int i = 0; i < parts; i++) {
        const fl_status e = fl_l2_alloc(capacity / parts, sector, &c->p[i]);
        if (e) {
            fl_l2p_free(c);
            return e;
        }
    }
    while ((INT64_C(1) << c->shift) < sector) c->shift++;
    *out = c;
    return FL_OK;
}

void fl_l2p_free(fl_l2p *c)
{
    if (!c) return;
    for (int i = 0; i < c->parts; i++) fl_l2_free(c->p[i]);
    free(c);
}

/* the home partition of the sector holding byte a: parity of its 4 KiB page */
static int home(const fl_l2p *c, uint64_t a) { return c->parts == 1 ? 0 : __builtin_parityll(a >> 12); }

void fl_l2p_homed(const fl_l2p *c, uint64_t addr, int64_t len, int64_t homed[2])
{
    homed[0] = homed[1] = 0;
    if (len <= 0) return;
    const uint64_t first = addr >> c->shift, last = (addr + (uint64_t)len - 1) >> c->shift;
    const uint64_t per_page = (UINT64_C(1) << 12) >> c->shift ? (UINT64_C(1) << 12) >> c->shift : 1;
    for (uint64_t k = first; k <= last;) { /* a page at a time */
        const uint64_t end = (k / per_page + 1) * per_page - 1, stop = end < last ? end : last;
        homed[home(c, k << c->shift)] += (int64_t)(stop - k + 1);
        k = stop + 1;
    }
}

/* one sector lookup in partition p; 1 on a read miss */
static int miss(fl_l2 *p, uint64_t a, int write)
{
    const int64_t before = fl_l2_get_stats(p).read_misses;
    fl_l2_access(p, a, 1, write);
    return fl_l2_get_stats(p).read_misses != before;
}

unsigned fl_l2p_access(fl_l2p *c, int side, uint64_t addr, int64_t len, int kind)
{
    if (len <= 0) return 0;
    if (c->parts == 1) { /* the one LRU of l2.h, a range at a time */
        const int64_t before = fl_l2_get_stats(c->p[0]).read_misses;
        if (kind != FL_L2P_WRITE) fl_l2_access(c->p[0], addr, len, 0); /* a reduction reads the old value */
        if (kind != FL_L2P_READ) fl_l2_access(c->p[0], addr, len, 1);
        const int64_t missed = fl_l2_get_stats(c->p[0]).read_misses - before;
        c->st.dram_reads += missed;
        if (kind == FL_L2P_READ) c->st.read_misses += missed;
        else c->st.reduce_misses += missed;
        return 1u;
    }
    unsigned touched = 0;
    const uint64_t first = addr >> c->shift, last = (addr + (uint64_t)len - 1) >> c->shift;
    for (uint64_t k = first; k <= last; k++) {
        const uint64_t a = k << c->shift;
        const int h = home(c, a);
        if (kind == FL_L2P_READ) {
            touched |= 1u << side;
            if (!miss(c->p[side], a, 0)) continue;
            c->st.read_misses++;
            if (h == side) c->st.dram_reads++;
            else {
                c->st.fabric++;
                touched |= 1u << h;
                const int far = miss(c->p[h], a, 0);
                c->st.dram_reads += far, c->st.fabric_read_misses += far;
            }
        } else {
            touched |= 1u << h | 1u << (1 - h);
            c->st.fabric += h != side;
            fl_l2_drop(c->p[1 - h], a); /* the other partition's copy is stale now */
            if (kind == FL_L2P_REDUCE) {
                const int m = miss(c->p[h], a, 0);
                c->st.dram_reads += m, c->st.reduce_misses += m;
            }
            fl_l2_access(c->p[h], a, 1, 1);
        }
    }
    return touched;
}

int fl_l2p_parts(const fl_l2p *c) { return c->parts; }
int64_t fl_l2p_part_sectors(const fl_l2p *c) { return fl_l2_capacity_sectors(c->p[0]); }

fl_l2p_stats fl_l2p_get_stats(const fl_l2p *c)
{
    fl_l2p_stats s = c->st;
    s.writebacks = 0;
    for (int i = 0; i < c->parts; i++) s.writebacks += fl_l2_get_stats(c->p[i]).writebacks;
    return s;
}
