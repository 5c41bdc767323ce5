// Linux interfaces Glibc's module does not bring: process controls (Swift imports no variadic C
// function, and prctl(2) is variadic, so each call is an inline wrapper with fixed arguments) and
// extended attributes (<sys/xattr.h>). Only Sources/CofferCore/Process/ and Sources/CofferCore/FileSystem/
// import this module.
#ifndef COFFER_CLINUX_SHIM_H
#define COFFER_CLINUX_SHIM_H

#include <sys/prctl.h>
#include <sys/xattr.h>

/// prctl(PR_SET_DUMPABLE, 0): no core dump, and /proc/PID/mem and ptrace refuse unprivileged callers.
static inline int coffer_prctl_set_not_dumpable(void) { return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0); }

/// prctl(PR_GET_DUMPABLE): 1 when the process may be dumped, 0 when not, -1 on error.
static inline int coffer_prctl_get_dumpable(void) { return prctl(PR_GET_DUMPABLE, 0, 0, 0, 0); }

/// prctl(PR_SET_NAME, name): names the calling thread (the kernel keeps 15 bytes); 0 or -1.
static inline int coffer_prctl_set_thread_name(const char *name) {
    return prctl(PR_SET_NAME, (unsigned long)name, 0, 0, 0);
}

#endif
