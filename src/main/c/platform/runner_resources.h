/*
 * The runner_* entries for slots, banks, the prebuilt cache and callable
 * uploads are the same on every platform: platform/runner_resources.c
 * forwards them to the DeviceResources each runner embeds
 * (common/device_resources.h), and the host-library entries (hbg orchestration
 * libraries, loaded on the host on every platform) to its LibraryCache. A runner
 * only hands those two out.
 */
#ifndef PTORUN_RUNNER_RESOURCES_H
#define PTORUN_RUNNER_RESOURCES_H

#include "common/device_resources.h"
#include "util/library_cache.h"
#include "platform/runner.h"

DeviceResources *runner_device_resources(Runner *r);
LibraryCache *runner_host_libraries(Runner *r);

#endif
