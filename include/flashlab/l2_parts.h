/* l2_parts.h: an L2 cut into partitions, as the H100's and H200's is (docs/l2_model.md §6).
 *
 * Each of P partitions is an LRU cache of l2.h holding capacity / P bytes.  Every SM is attached
 * to one partition (its side) and every sector has a home partition (parity of its 4 KiB page:
 * tiles of whole pages split evenly; the hardware's own hash is not public).  With P = 2:
 *
 *   read from side s   the sector is looked up in partition s.  A miss of a sector homed in s
 *                      reads DRAM.  A miss of a sector homed in the other partition crosses the
 *                      fabric (one fabric sector) to be looked up in its home (a miss there reads
 *                      DRAM), and partition s keeps a copy: data that SMs of both sides read is
 *                      held twice, so it finds half the L2.
 *   write, reduction   done in the home partition (a fabric sector when the home is the other
 *                      side); a reduction reads the old value there first (a miss reads DRAM).
 *                      A copy in the other partition is dropped (invalidated), so the next read
 *                      from that side crosses the fabric again.
 *
 * P = 1 is the one LRU cache of l2.h, unchanged.  The two-partition rule is measured, not
 * assumed: bench/l2_probe.cu (figures/data/l2_probe.csv) finds that a buffer every SM reads twice
 * stays in the H200's 60 MiB L2 up to 28 MiB, and one each SM reads a slice of up to 36 MiB.
 */
#ifndef FL_L2_PARTS_H
#define FL_L2_PARTS_H
#include <stdint.h>

#include "status.h"

typedef struct fl_l2p fl_l2p;

enum { FL_L2P_READ = 0, FL_L2P_WRITE = 1, FL_L2P_REDUCE = 2 };

/* What the partitions have done since they were made, in sectors. */
typedef struct {
    int64_t dram_reads;  /* read and reduction misses in the home partition */
    int64_t fabric;      /* sectors that crossed between partitions: near read misses of sectors
                            homed in the other, and writes and reductions from the other side */
    int64_t writebacks;  /* dirty sectors evicted */
    /* the lookups that missed, as Nsight Compute counts them (docs/third_party.md §6): */
    int64_t read_misses;        /* reads that missed in the reading side's partition
                                   (lts__t_sectors_srcunit_tex_op_read_lookup_miss) */
    int64_t fabric_read_misses; /* of those homed in the other partition, the ones that missed in their
                                   home too (lts__t_sectors_srcunit_ltcfabric_op_read_lookup_miss) */
    int64_t reduce_misses;      /* reductions that missed in their home partition
                                   (lts__t_sectors_srcunit_tex_op_red_lookup_miss) */
} fl_l2p_stats;

/* Makes `parts` (1 or 2) empty partitions of capacity / parts bytes each in sectors of `sector`
 * bytes (a power of two).  FL_EINVAL naming --l2-partitions, --l2-mb or --sector; FL_ENOMEM.
 * *out = NULL on failure.  Free with fl_l2p_free. */
fl_status fl_l2p_alloc(int64_t capacity, int64_t sector, int parts, fl_l2p **out);
void fl_l2p_free(fl_l2p *c);

/* The bytes fl_l2p_alloc would allocate (fl_l2_memory of each partition), without allocating. */
fl_status fl_l2p_memory(int64_t capacity, int64_t sector, int parts, int64_t *bytes);

/* Reads, writes or reduces (FL_L2P_*) the bytes [addr, addr + len) from an SM on side `side`
 * (0 <= side < parts), every sector touched once in increasing address order, by the rules above.
 * Returns the set of partitions (bit p) whose contents or LRU order it may have changed. */
unsigned fl_l2p_access(fl_l2p *c, int side, uint64_t addr, int64_t len, int kind);

/* For [addr, addr + len): the sectors homed in each partition (homed[0 .. parts - 1]). */
void fl_l2p_homed(const fl_l2p *c, uint64_t addr, int64_t len, int64_t homed[2]);

int fl_l2p_parts(const fl_l2p *c);
int64_t fl_l2p_part_sectors(const fl_l2p *c); /* the capacity of one partition, in sectors */
fl_l2p_stats fl_l2p_get_stats(const fl_l2p *c);
#endif
