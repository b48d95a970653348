/* l2.h: a last-level cache between HBM and the SMs (docs/l2_model.md §1).
 *
 * A fully associative cache of `capacity` bytes in sectors of `sector` bytes (H200: 60 MB of
 * L2, 32-byte sectors), replaced least-recently-used.  Reads that miss fetch their sector from
 * DRAM (counted in dram_read_B); writes allocate their sector without reading DRAM (the SMs
 * write whole sectors or byte-masked parts; docs/l2_model.md rule L2) and mark it dirty; a dirty
 * sector that is evicted is written back (dram_writeback_B).  The cache never reads a byte
 * address: callers give byte ranges and the cache rounds them out to whole sectors (rule L1).
 *
 * One run of a kernel in ncu with --cache-control all starts from an empty L2: fl_l2_flush.
 */
#ifndef FL_L2_H
#define FL_L2_H
#include <stdint.h>

#include "status.h"

typedef struct fl_l2 fl_l2;

/* What the cache has seen since it was made (or last reset with fl_l2_reset_stats). */
typedef struct {
    int64_t read_sectors, read_hits, read_misses; /* sector lookups of reads and their outcome */
    int64_t write_sectors;                        /* sectors written */
    int64_t evictions, writebacks;                /* sectors evicted; dirty ones among them */
} fl_l2_stats;

/* Makes an empty cache of capacity bytes (>= sector, at most 2^30 sectors) in sectors of `sector`
 * bytes (a power of two) in *out.  FL_EINVAL naming --l2-mb or --sector, FL_ENOMEM; *out = NULL
 * then.  Free with fl_l2_free. */
fl_status fl_l2_alloc(int64_t capacity, int64_t sector, fl_l2 **out);
void fl_l2_free(fl_l2 *c);

/* The bytes fl_l2_alloc(capacity, sector) allocates (24 a sector, and a hash table of at least
 * 8 bytes a sector), without allocating them: what a caller checks against its memory limit
 * first.  FL_EINVAL as fl_l2_alloc for a shape it refuses. */
fl_status fl_l2_memory(int64_t capacity, int64_t sector, int64_t *bytes);

/* Reads (write = 0) or writes (write = 1) the bytes [addr, addr + len): every sector the range
 * touches is looked up once, in increasing address order, and becomes the most recently used.
 * len <= 0 does nothing. */
void fl_l2_access(fl_l2 *c, uint64_t addr, int64_t len, int write);

/* Empties the cache (dirty sectors are dropped: what a flush writes back is outside a kernel's
 * counters) and keeps the statistics. */
void fl_l2_flush(fl_l2 *c);

/* Takes the sector holding byte addr out of the cache if it is there, without writing it back
 * (a stale copy invalidated: l2_parts.h); its slot is reused first. */
void fl_l2_drop(fl_l2 *c, uint64_t addr);

/* Number of sectors the cache holds now, and its capacity in sectors. */
int64_t fl_l2_resident(const fl_l2 *c);
int64_t fl_l2_capacity_sectors(const fl_l2 *c);
int64_t fl_l2_sector_bytes(const fl_l2 *c);

/* 1 if the sector holding byte addr is resident (does not touch the LRU order). */
int fl_l2_contains(const fl_l2 *c, uint64_t addr);

fl_l2_stats fl_l2_get_stats(const fl_l2 *c);
#endif
