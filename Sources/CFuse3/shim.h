// libfuse 3 (Debian's libfuse3-dev), for `coffer mount`. Only Sources/CofferMount/FUSE/ imports this
// module. The API version is fixed here: fuse.h picks its function versions by macros, which Swift
// cannot call, so the one versioned entry point is an inline wrapper.
#ifndef COFFER_CFUSE3_SHIM_H
#define COFFER_CFUSE3_SHIM_H

#define FUSE_USE_VERSION 35
#include <fuse.h>
#include <fuse_lowlevel.h>

/// fuse_new at API version 3.5 (a macro over a versioned symbol in fuse.h).
static inline struct fuse *coffer_fuse_new(struct fuse_args *args, const struct fuse_operations *operations,
                                           void *private_data) {
    return fuse_new(args, operations, sizeof(struct fuse_operations), private_data);
}

/// The private data given to coffer_fuse_new, from inside an operation.
static inline void *coffer_fuse_private_data(void) {
    struct fuse_context *context = fuse_get_context();
    return context == NULL ? NULL : context->private_data;
}

#endif
