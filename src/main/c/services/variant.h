/* The variant this library was compiled as, from the three -D switches. */
#ifndef PTORUN_VARIANT_H
#define PTORUN_VARIANT_H

#include "arch/arch.h"

#if defined(PTO_PLATFORM_SIM) == defined(PTO_PLATFORM_ONBOARD)
#error "exactly one of PTO_PLATFORM_SIM and PTO_PLATFORM_ONBOARD must be defined"
#endif
#if defined(PTO_RUNTIME_HBG) == defined(PTO_RUNTIME_TRB)
#error "exactly one of PTO_RUNTIME_HBG and PTO_RUNTIME_TRB must be defined"
#endif

#ifdef PTO_PLATFORM_SIM
#define PTO_PLATFORM_NAME "sim"
#else
#define PTO_PLATFORM_NAME "onboard"
#endif

#ifdef PTO_RUNTIME_HBG
#define PTO_RUNTIME_NAME "hbg"
#else
#define PTO_RUNTIME_NAME "trb"
#endif

#define PTO_VARIANT_NAME PTO_ARCH_NAME "/" PTO_PLATFORM_NAME "/" PTO_RUNTIME_NAME

#endif
