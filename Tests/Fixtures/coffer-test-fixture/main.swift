// A stand-in for other processes in tests: it does one thing a test cannot do to its own process, prints
// "ready", then sleeps until killed.
//
//   coffer-test-fixture hold-open DIR     opens the LMDB environment in DIR and keeps it open (so the
//                                         lock file's reader table survives other processes' exits)
//   coffer-test-fixture hold-reader DIR   also begins a read transaction, taking a reader slot; killed
//                                         with SIGKILL, it leaves a stale slot, as a crashed Coffer
//                                         process would
//   coffer-test-fixture old-write DIR N   commits N write transactions the way a Coffer from before the
//                                         transaction stamps did (a meta entry changed, no stamp), then
//                                         exits at once
import CLMDB
import Foundation

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("coffer-test-fixture: \(message)\n".utf8))
    exit(2)
}

func check(_ result: Int32, _ call: String) {
    if result != 0 { fail("\(call): \(String(cString: mdb_strerror(result)))") }
}

let arguments = CommandLine.arguments
guard arguments.count >= 3, ["hold-open", "hold-reader", "old-write"].contains(arguments[1]) else {
    fail("usage: coffer-test-fixture hold-open|hold-reader DIR | old-write DIR N")
}

var environment: OpaquePointer?
check(mdb_env_create(&environment), "mdb_env_create")
check(mdb_env_set_maxdbs(environment, 32), "mdb_env_set_maxdbs")
check(mdb_env_open(environment, arguments[2], UInt32(MDB_NOTLS), 0o600), "mdb_env_open")
if arguments[1] == "old-write" {
    for index in 0..<(arguments.count > 3 ? Int(arguments[3]) ?? 1 : 1) {
        var transaction: OpaquePointer?
        check(mdb_txn_begin(environment, nil, 0, &transaction), "mdb_txn_begin")
        var meta: MDB_dbi = 0
        check(mdb_dbi_open(transaction, "meta", 0, &meta), "mdb_dbi_open(meta)")
        var key = Array("test-old-write".utf8)
        var value = Array("write \(index)".utf8)
        let status = key.withUnsafeMutableBytes { keyBytes in
            value.withUnsafeMutableBytes { valueBytes in
                var keyValue = MDB_val(mv_size: keyBytes.count, mv_data: keyBytes.baseAddress)
                var dataValue = MDB_val(mv_size: valueBytes.count, mv_data: valueBytes.baseAddress)
                return mdb_put(transaction, meta, &keyValue, &dataValue, 0)
            }
        }
        check(status, "mdb_put")
        check(mdb_txn_commit(transaction), "mdb_txn_commit")
    }
    exit(0)
}
if arguments[1] == "hold-reader" {
    var transaction: OpaquePointer?
    check(mdb_txn_begin(environment, nil, UInt32(MDB_RDONLY), &transaction), "mdb_txn_begin")
}
FileHandle.standardOutput.write(Data("ready\n".utf8))
while true { sleep(60) }
