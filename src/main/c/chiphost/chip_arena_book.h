/* The arena allocator's bookkeeping, between chip_arena.c (create, close) and
 * chip_arena_alloc.c (the allocator). */
#ifndef PTORUN_CHIP_ARENA_BOOK_H
#define PTORUN_CHIP_ARENA_BOOK_H

#include "chiphost/chip_arena.h"

/* a->book for an arena just mapped: one free range, the whole arena. */
int chip_arena_book_create(ChipArena *a);
/* Frees a->book (NULL tolerated) and sets it NULL. */
void chip_arena_book_free(ChipArena *a);

#endif
