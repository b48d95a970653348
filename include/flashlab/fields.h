/* fields.h: a structure's fields as data, for the front ends that cannot read C headers (the
 * Python binding builds its ctypes structures from these tables and checks them field by field).
 * A structure the library shares this way declares its fields once, as an X-macro list
 * X(kind, type, name, default, what) (problem.h: FL_PROBLEM_FIELDS; decode.h: FL_KV_CACHE_FIELDS;
 * blocksparse_mask.h: FL_BLOCK_SPARSITY_FIELDS), from which its struct, its defaults and its
 * table are all made. */
#ifndef FL_FIELDS_H
#define FL_FIELDS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The kinds of a field: C int (and the enums), the schedule's registry position, 64-bit signed
 * and unsigned integers, double, a caller-owned array of int64_t, and a caller-owned pointer to
 * an extension structure (which has a table of its own). */
enum { FL_FK_INT, FL_FK_ALGO, FL_FK_I64, FL_FK_U64, FL_FK_F64, FL_FK_I64_ARRAY, FL_FK_EXT };

/* One field: its name, byte offset and size, and kind (FL_FK_*). */
typedef struct {
    const char *name;
    size_t offset, size;
    int kind;
} fl_field;

/* X-macro helpers: a struct member, a default value, a table entry. */
#define FL_FIELD_MEMBER(kind, type, name, dflt, what) type name;
#define FL_FIELD_DEFAULT(kind, type, name, dflt, what) .name = dflt,

#ifdef __cplusplus
}
#endif

#endif
