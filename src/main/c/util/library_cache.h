/*
 * Shared libraries loaded from bytes: user kernel libraries (the sim device
 * side) and user orchestration libraries (the hbg host side) arrive inside a
 * ChipCallable, not as files. Each distinct image is written to an anonymous
 * memory file and dlopen'ed from /proc/self/fd/<fd> (RTLD_NOW | RTLD_LOCAL),
 * once per content (FNV-1a 64 hash, size and bytes) per cache, and
 * refcounted: a second callable, or a second child, with the same image takes
 * another reference to the same load. The last release unloads it.
 *
 * One cache per device context and side, so two device contexts never share a
 * library's globals. The memory file stays open while the library is loaded:
 * the dynamic loader knows an object by its path, and a reused fd number must
 * not hand back another image. Thread-safe (own mutex).
 */
#ifndef PTORUN_LIBRARY_CACHE_H
#define PTORUN_LIBRARY_CACHE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

typedef struct LibraryEntry {
    void *handle;             /* dlopen handle */
    int fd;                   /* the memory file holding the image */
    uint64_t hash;            /* FNV-1a 64 of the image */
    size_t size;
    uint32_t refs;
} LibraryEntry;

typedef struct LibraryCache {
    pthread_mutex_t lock;     /* guards everything below */
    const char *what;         /* "kernel library", "orchestration library": names it in messages */
    LibraryEntry *entries;
    size_t count, cap;
    size_t loads;             /* images ever loaded (dlopen calls that succeeded) */
} LibraryCache;

/* Writes image[0..size) to a new memory file and dlopens it from there
 * (RTLD_NOW | RTLD_LOCAL): a private copy, uncached. The caller owns *handle
 * and *fd (dlclose, then close). Failures are recorded naming `what`:
 * `refusal` when the bytes are not a loadable library, PTO_ERR_FAILED for host
 * failures; then *handle is NULL and *fd -1. */
int library_open_bytes(const char *what, const void *image, size_t size, int refusal, void **handle, int *fd);

int library_cache_init(LibraryCache *c, const char *what);

/* Unloads everything and frees the cache. */
void library_cache_destroy(LibraryCache *c);

/* Unloads everything still loaded (finalize_device); `loads` is kept. */
void library_cache_clear(LibraryCache *c);

/* A reference to the library in image[0..size): loaded now, or the load
 * already holding the same bytes. PTO_ERR_BAD_CALLABLE (message with dlerror)
 * when the bytes are not a loadable library; PTO_ERR_INVALID_ARGUMENT for no
 * bytes; PTO_ERR_FAILED / PTO_ERR_OUT_OF_MEMORY for host failures. */
int library_cache_acquire(LibraryCache *c, const void *image, size_t size, void **handle);

/* Drops a reference taken by library_cache_acquire (the last one unloads).
 * PTO_ERR_INVALID_ARGUMENT for a handle the cache does not hold. */
int library_cache_release(LibraryCache *c, void *handle);

/* The address of `symbol` (size bytes, not NUL-terminated) in a loaded
 * library, or NULL with the loader's message in `why` (why_size bytes). */
void *library_cache_symbol(void *handle, const char *symbol, size_t symbol_size, char *why, size_t why_size);

size_t library_cache_loads(LibraryCache *c);
size_t library_cache_loaded(LibraryCache *c);   /* distinct images loaded now */

#endif
