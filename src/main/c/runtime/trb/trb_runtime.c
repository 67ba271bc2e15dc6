/* The trb runtime: registration, bind and validate. Not built yet: every
 * entry refuses with PTO_RUNTIME_ERR_UNSUPPORTED and says so. */
#include "common/last_error.h"
#include "runtime/runtime.h"

#define RUNTIME_NOT_BUILT "the trb runtime is not built yet (issue [3/8])"

int runtime_supports_concurrent_prepare(void)
{
    return 0;
}

int runtime_register_callable(const HostApi *api, const void *callable, RuntimeCallable **out)
{
    (void)api, (void)callable, (void)out;
    return pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, "register_callable: " RUNTIME_NOT_BUILT);
}

void runtime_release_callable(const HostApi *api, RuntimeCallable *c)
{
    (void)api, (void)c;
}

int runtime_prewarm(const HostApi *api, const CallConfig *cfg)
{
    (void)api, (void)cfg;
    return PTO_OK;
}

int runtime_bind(RuntimeRun *run, const HostApi *api, const RuntimeCallable *c, const ChipStorageTaskArgs *args,
                 const CallConfig *cfg, const NativeRunDescriptor *desc, DeviceLaunch *launch)
{
    (void)run, (void)api, (void)c, (void)args, (void)cfg, (void)desc, (void)launch;
    return pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, "bind: " RUNTIME_NOT_BUILT);
}

int runtime_validate(RuntimeRun *run, const HostApi *api, int launched, int execution_rc)
{
    (void)run, (void)api, (void)launched, (void)execution_rc;
    return pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, "validate: " RUNTIME_NOT_BUILT);
}
