/* Entries of the golden tables (struct golden_field / golden_struct / golden_value of
 * golden.h), shared by golden.c and ffi.c. */
#ifndef MLX5_GOLDEN_TABLE_H
#define MLX5_GOLDEN_TABLE_H

#include <stddef.h>

#include "golden.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define FIELD(s, f, primary) \
	{ #s, #f, offsetof(struct s, f), sizeof(((struct s *)0)->f), primary }
#define STRUCT(s) { #s, sizeof(struct s) }
#define CONST(c) { #c, (int64_t)(c) }

/* A flexible (or zero-length) trailing array: where "the rest of the buffer" begins. Size 0
 * and not primary, so it takes no part in tiling. */
#define TAIL(s, f) { #s, #f, offsetof(struct s, f), 0, 0 }
/* A struct's alignment, as a constant named "_Alignof(struct s)". */
#define ALIGNOF(s) { "_Alignof(struct " #s ")", (int64_t)_Alignof(struct s) }
/* STRUCT and ALIGNOF as list items, for an X-macro list of struct names. */
#define STRUCT_ENTRY(s) STRUCT(s),
#define ALIGNOF_ENTRY(s) ALIGNOF(s),

/* The three accessors of one set of tables `fields`, `structs` and `constants`:
 * <prefix>_fields, <prefix>_structs and <prefix>_constants, declared in golden.h. */
#define TABLE_ACCESSORS(prefix)                                        \
	const struct golden_field *prefix##_fields(size_t *count)      \
	{                                                              \
		*count = COUNT(fields);                                \
		return fields;                                         \
	}                                                              \
	const struct golden_struct *prefix##_structs(size_t *count)    \
	{                                                              \
		*count = COUNT(structs);                               \
		return structs;                                        \
	}                                                              \
	const struct golden_value *prefix##_constants(size_t *count)   \
	{                                                              \
		*count = COUNT(constants);                             \
		return constants;                                      \
	}

#endif
