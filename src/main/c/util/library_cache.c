#include "util/library_cache.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ptorun/chip_callable.h"
#include "ptorun/pto_runtime_c_api.h"
#include "util/content_hash.h"
#include "util/last_error.h"

int library_cache_init(LibraryCache *c, const char *what)
{
    memset(c, 0, sizeof *c);
    c->what = what;
    return pthread_mutex_init(&c->lock, NULL) == 0 ? PTO_OK : PTO_ERR_FAILED;
}

static void unload(LibraryEntry *e)
{
    dlclose(e->handle);
    close(e->fd);
}

void library_cache_clear(LibraryCache *c)
{
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < c->count; i++)
        unload(&c->entries[i]);
    c->count = 0;
    pthread_mutex_unlock(&c->lock);
}

void library_cache_destroy(LibraryCache *c)
{
    library_cache_clear(c);
    free(c->entries);
    pthread_mutex_destroy(&c->lock);
    memset(c, 0, sizeof *c);
}

static int write_all(int fd, const uint8_t *bytes, size_t size)
{
    while (size > 0) {
        ssize_t n = write(fd, bytes, size);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        bytes += n;
        size -= (size_t)n;
    }
    return 0;
}

/* Same bytes as the entry's memory file (the hash and size already match). */
static int same_image(const LibraryEntry *e, const void *image, size_t size)
{
    void *map = mmap(NULL, size, PROT_READ, MAP_SHARED, e->fd, 0);
    if (map == MAP_FAILED)
        return 0; /* cannot prove it: load another copy */
    int same = memcmp(map, image, size) == 0;
    munmap(map, size);
    return same;
}

int library_open_bytes(const char *what, const void *image, size_t size, int refusal, void **handle, int *fd)
{
    *handle = NULL;
    *fd = memfd_create(what, MFD_CLOEXEC);
    if (*fd < 0)
        return pto_fail(PTO_ERR_FAILED, "%s: memfd_create failed: %s", what, strerror(errno));
    if (write_all(*fd, image, size) != 0) {
        int err = errno;
        close(*fd);
        *fd = -1;
        return pto_fail(PTO_ERR_FAILED, "%s: writing %zu bytes to its memory file failed: %s", what, size,
                        strerror(err));
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", *fd);
    *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (*handle == NULL) {
        const char *why = dlerror();
        close(*fd);
        *fd = -1;
        return pto_fail(refusal, "%s (%zu bytes) cannot be loaded: %s", what, size,
                        why != NULL ? why : "unknown loader error");
    }
    return PTO_OK;
}

/* Writes the image to a memory file and loads it. */
static int load(LibraryCache *c, const void *image, size_t size, LibraryEntry *out)
{
    char what[96];
    snprintf(what, sizeof what, "%s image", c->what);
    void *handle;
    int fd;
    int rc = library_open_bytes(what, image, size, PTO_ERR_BAD_CALLABLE, &handle, &fd);
    if (rc != PTO_OK)
        return rc;
    for (size_t i = 0; i < c->count; i++)
        if (c->entries[i].handle == handle) {
            /* the loader matched another live object: never alias two images */
            dlclose(handle);
            close(fd);
            return pto_fail(PTO_ERR_FAILED, "%s: the dynamic loader returned an already loaded object for new bytes",
                            c->what);
        }
    *out = (LibraryEntry){ handle, fd, 0, size, 1 };
    return PTO_OK;
}

static int reserve_entry(LibraryCache *c)
{
    if (c->count < c->cap)
        return PTO_OK;
    size_t cap = c->cap ? c->cap * 2 : 8;
    LibraryEntry *grown = realloc(c->entries, cap * sizeof *grown);
    if (grown == NULL)
        return pto_fail(PTO_ERR_OUT_OF_MEMORY, "%s: out of host memory", c->what);
    c->entries = grown;
    c->cap = cap;
    return PTO_OK;
}

int library_cache_acquire(LibraryCache *c, const void *image, size_t size, void **handle)
{
    *handle = NULL;
    if (image == NULL || size == 0)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "%s: no image bytes", c->what);
    uint64_t hash = pto_fnv1a64(image, size);
    pthread_mutex_lock(&c->lock);
    int rc = PTO_OK;
    for (size_t i = 0; i < c->count; i++) {
        LibraryEntry *e = &c->entries[i];
        if (e->hash == hash && e->size == size && same_image(e, image, size)) {
            e->refs++;
            *handle = e->handle;
            goto out;
        }
    }
    LibraryEntry e;
    if ((rc = reserve_entry(c)) != PTO_OK || (rc = load(c, image, size, &e)) != PTO_OK)
        goto out;
    e.hash = hash;
    c->entries[c->count++] = e;
    c->loads++;
    *handle = e.handle;
out:
    pthread_mutex_unlock(&c->lock);
    return rc;
}

int library_cache_release(LibraryCache *c, void *handle)
{
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < c->count; i++) {
        LibraryEntry *e = &c->entries[i];
        if (e->handle != handle)
            continue;
        if (--e->refs == 0) {
            unload(e);
            c->entries[i] = c->entries[--c->count];
        }
        pthread_mutex_unlock(&c->lock);
        return PTO_OK;
    }
    pthread_mutex_unlock(&c->lock);
    return pto_fail(PTO_ERR_INVALID_ARGUMENT, "%s: %p is not a loaded library", c->what, handle);
}

void *library_cache_symbol(void *handle, const char *symbol, size_t symbol_size, char *why, size_t why_size)
{
    char name[PTO_CALLABLE_MAX_NAME + 1];
    if (symbol_size == 0 || symbol_size > PTO_CALLABLE_MAX_NAME) {
        snprintf(why, why_size, "a symbol name is 1..%u bytes", PTO_CALLABLE_MAX_NAME);
        return NULL;
    }
    memcpy(name, symbol, symbol_size);
    name[symbol_size] = '\0';
    dlerror(); /* clear a stale message */
    void *addr = dlsym(handle, name);
    if (addr == NULL) {
        const char *err = dlerror();
        snprintf(why, why_size, "%s", err != NULL ? err : "the symbol's address is NULL");
    }
    return addr;
}

size_t library_cache_loads(LibraryCache *c)
{
    pthread_mutex_lock(&c->lock);
    size_t n = c->loads;
    pthread_mutex_unlock(&c->lock);
    return n;
}

size_t library_cache_loaded(LibraryCache *c)
{
    pthread_mutex_lock(&c->lock);
    size_t n = c->count;
    pthread_mutex_unlock(&c->lock);
    return n;
}
