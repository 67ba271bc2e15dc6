/* A device image loaded in-process for one simulated device: the bytes go to
 * an anonymous memory file and are dlopen'ed from there (RTLD_NOW |
 * RTLD_LOCAL), so every device context gets its own copy of the image and two
 * simulated devices share no device-side globals. */
#ifndef PTORUN_SIM_IMAGE_H
#define PTORUN_SIM_IMAGE_H

#include <stddef.h>
#include <stdint.h>

typedef struct SimImage {
    void *handle;     /* NULL when not loaded */
    int fd;           /* the memory file, open while loaded: the loader knows an
                         object by its path (/proc/self/fd/<fd>), so a live image
                         must keep its fd number to itself */
    const char *what; /* "AICPU image", "AICore image": names it in messages */
} SimImage;

/* Loads a private copy of the image and checks its device ABI version.
 * PTO_ERR_INVALID_ARGUMENT (message recorded) for empty or unloadable bytes. */
int sim_image_load(SimImage *img, const char *what, const uint8_t *bytes, size_t size);

/* The address of `name` in this copy, or NULL. */
void *sim_image_symbol(const SimImage *img, const char *name);

void sim_image_unload(SimImage *img);

#endif
