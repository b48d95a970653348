/* l2.c: the fully associative LRU sector cache of l2.h.  A slot array holds the resident sectors,
 * chained into hash buckets (next) and into one LRU list (prev/nxt, head = most recent). */
#include <flashlab/l2.h>

#include <stdlib.h>

#define NIL (-1)

/* 24 bytes a sector: slot indices fit in 32 bits (at most 2^30 sectors) */
typedef struct {
    uint64_t key;           /* sector number = byte address / sector */
    int32_t hnext;          /* next slot in the same bucket */
    int32_t prev, nxt;      /* LRU list */
    uint8_t dirty;
} slot;

struct fl_l2 {
    int64_t cap, sector, used, nfree; /* slots handed out; dropped slots waiting in the free list */
    int32_t free_head;                /* the free list, chained through hnext */
    int shift;
    slot *s;
    int32_t *bucket;
    int64_t nbucket;          /* a power of two, at least 2 * cap */
    int64_t head, tail;       /* most and least recently used */
    fl_l2_stats st;
};

static uint64_t hash(uint64_t k) /* splitmix64's finaliser */
{
    k ^= k >> 30;
    k *= 0xbf58476d1ce4e5b9ULL;
    k ^= k >> 27;
    k *= 0x94d049bb133111ebULL;
    return k ^ (k >> 31);
}

/* The buckets of a cache of cap sectors. */
static int64_t buckets_for(int64_t cap)
{
    int64_t n = 1;
    while (n < 2 * cap) n *= 2;
    return n;
}

static fl_status check_shape(int64_t capacity, int64_t sector)
{
    if (sector < 1 || (sector & (sector - 1)))
        return fl_fail(FL_EINVAL, "{sector}: must be a power of two >= 1 bytes (got %lld)", (long long)sector);
    if (capacity < sector || capacity / sector > (INT64_C(1) << 30))
        return fl_fail(FL_EINVAL, "{l2_mb}: the capacity must hold at least one sector and at most 2^30 sectors");
    return FL_OK;
}

fl_status fl_l2_memory(int64_t capacity, int64_t sector, int64_t *bytes)
{
    FL_TRY(check_shape(capacity, sector));
    const int64_t cap = capacity / sector;
    *bytes = (int64_t)sizeof(struct fl_l2) + cap * (int64_t)sizeof(slot) + buckets_for(cap) * (int64_t)sizeof(int32_t);
    return FL_OK;
}

fl_status fl_l2_alloc(int64_t capacity, int64_t sector, fl_l2 **out)
{
    *out = NULL;
    FL_TRY(check_shape(capacity, sector));
    fl_l2 *c = calloc(1, sizeof *c);
    if (!c) goto oom;
    c->sector = sector;
    while ((INT64_C(1) << c->shift) < sector) c->shift++;
    c->cap = capacity / sector;
    c->nbucket = buckets_for(c->cap);
    c->s = malloc((size_t)c->cap * sizeof *c->s);
    c->bucket = malloc((size_t)c->nbucket * sizeof *c->bucket);
    if (!c->s || !c->bucket) goto oom;
    fl_l2_flush(c);
    *out = c;
    return FL_OK;
oom:
    fl_l2_free(c);
    return fl_fail(FL_ENOMEM, "l2: out of memory for a cache of %lld bytes", (long long)capacity);
}

void fl_l2_free(fl_l2 *c)
{
    if (!c) return;
    free(c->s);
    free(c->bucket);
    free(c);
}

void fl_l2_flush(fl_l2 *c)
{
    for (int64_t b = 0; b < c->nbucket; b++) c->bucket[b] = NIL;
    c->used = c->nfree = 0;
    c->free_head = NIL;
    c->head = c->tail = NIL;
}

static void lru_unlink(fl_l2 *c, int64_t i)
{
    slot *x = &c->s[i];
    if (x->prev != NIL) c->s[x->prev].nxt = x->nxt; else c->head = x->nxt;
    if (x->nxt != NIL) c->s[x->nxt].prev = x->prev; else c->tail = x->prev;
}

static void lru_push_front(fl_l2 *c, int64_t i)
{
    slot *x = &c->s[i];
    x->prev = NIL;
    x->nxt = (int32_t)c->head;
    if (c->head != NIL) c->s[c->head].prev = (int32_t)i; else c->tail = i;
    c->head = i;
}

static int64_t find(const fl_l2 *c, uint64_t key, int32_t **link)
{
    int32_t *p = &c->bucket[hash(key) & (uint64_t)(c->nbucket - 1)];
    while (*p != NIL && c->s[*p].key != key) p = &c->s[*p].hnext;
    if (link) *link = p;
    return *p;
}

/* Takes the least recently used slot out of the cache (and its bucket); returns it. */
static int64_t evict(fl_l2 *c)
{
    const int64_t i = c->tail;
    int32_t *link;
    find(c, c->s[i].key, &link);
    *link = c->s[i].hnext;
    lru_unlink(c, i);
    c->st.evictions++;
    if (c->s[i].dirty) c->st.writebacks++;
    return i;
}

static void touch(fl_l2 *c, uint64_t key, int write)
{
    int32_t *link;
    int64_t i = find(c, key, &link);
    if (write) c->st.write_sectors++;
    else c->st.read_sectors++;
    if (i != NIL) {
        if (!write) c->st.read_hits++;
        lru_unlink(c, i);
    } else {
        if (!write) c->st.read_misses++;
        if (c->nfree > 0) {
            i = c->free_head;
            c->free_head = c->s[i].hnext;
            c->nfree--;
        } else if (c->used < c->cap) i = c->used++;
        else {
            i = evict(c);
            find(c, key, &link); /* the eviction may have moved this bucket's chain */
        }
        c->s[i].key = key;
        c->s[i].dirty = 0;
        c->s[i].hnext = NIL;
        *link = (int32_t)i;
    }
    if (write) c->s[i].dirty = 1;
    lru_push_front(c, i);
}

void fl_l2_access(fl_l2 *c, uint64_t addr, int64_t len, int write)
{
    if (len <= 0) return;
    const uint64_t first = addr >> c->shift, last = (addr + (uint64_t)len - 1) >> c->shift;
    for (uint64_t k = first; k <= last; k++) touch(c, k, write);
}

void fl_l2_drop(fl_l2 *c, uint64_t addr)
{
    int32_t *link;
    const int64_t i = find(c, addr >> c->shift, &link);
    if (i == NIL) return;
    *link = c->s[i].hnext;
    lru_unlink(c, i);
    c->s[i].hnext = c->free_head;
    c->free_head = (int32_t)i;
    c->nfree++;
}

int64_t fl_l2_resident(const fl_l2 *c) { return c->used - c->nfree; }
int64_t fl_l2_capacity_sectors(const fl_l2 *c) { return c->cap; }
int64_t fl_l2_sector_bytes(const fl_l2 *c) { return c->sector; }
int fl_l2_contains(const fl_l2 *c, uint64_t addr) { return find(c, addr >> c->shift, NULL) != NIL; }
fl_l2_stats fl_l2_get_stats(const fl_l2 *c) { return c->st; }
