// zstd for Swift. Debian package: libzstd-dev. Only Sources/CofferCore/Compression/ imports this module.
#ifndef COFFER_CZSTD_SHIM_H
#define COFFER_CZSTD_SHIM_H

#include <zstd.h>
#include <zstd_errors.h>

#endif
