// LMDB for Swift. Debian package: liblmdb-dev. Only Sources/CofferCore/Storage/ imports this module.
#ifndef COFFER_CLMDB_SHIM_H
#define COFFER_CLMDB_SHIM_H

#include <lmdb.h>

#endif
