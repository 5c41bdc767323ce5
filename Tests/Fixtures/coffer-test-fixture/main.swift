// A stand-in for other processes in tests: it does one thing a test cannot do to its own process, prints
// "ready", then sleeps until killed.
//
//   coffer-test-fixture hold-open DIR     opens the LMDB environment in DIR and keeps it open (so the
//                                         lock file's reader table survives other processes' exits)
//   coffer-test-fixture hold-reader DIR   also begins a read transaction, taking a reader slot; killed
//                                         with SIGKILL, it leaves a stale slot, as a crashed Coffer
//                                         process would
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
guard arguments.count == 3, ["hold-open", "hold-reader"].contains(arguments[1]) else {
    fail("usage: coffer-test-fixture hold-open|hold-reader DIR")
}

var environment: OpaquePointer?
check(mdb_env_create(&environment), "mdb_env_create")
check(mdb_env_set_maxdbs(environment, 32), "mdb_env_set_maxdbs")
check(mdb_env_open(environment, arguments[2], UInt32(MDB_NOTLS), 0o600), "mdb_env_open")
if arguments[1] == "hold-reader" {
    var transaction: OpaquePointer?
    check(mdb_txn_begin(environment, nil, UInt32(MDB_RDONLY), &transaction), "mdb_txn_begin")
}
FileHandle.standardOutput.write(Data("ready\n".utf8))
while true { sleep(60) }
