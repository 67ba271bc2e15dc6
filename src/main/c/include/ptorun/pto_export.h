/* The one export macro: everything else is hidden (-fvisibility=hidden). */
#ifndef PTORUN_PTO_EXPORT_H
#define PTORUN_PTO_EXPORT_H
#define PTO_EXPORT __attribute__((visibility("default")))
#endif
