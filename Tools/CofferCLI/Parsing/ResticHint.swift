/// What restic calls by a name `coffer` does not know, said in `coffer`'s words: a restic user's
/// habit (`-r`, `check`, `prune`) gets a pointer to the command or option that does the job, instead
/// of a bare "unknown".
enum ResticHint {
    /// restic's commands that `coffer` names otherwise, or does without.
    static let commands: [String: String] = [
        "check": "restic's check is 'coffer verify' (with --read-data it also reads every chunk)",
        "prune":
            "coffer needs no prune: 'coffer forget' frees what it drops at once, and 'coffer compact' gives the space back to the file system",
        "copy":
            "restic's copy is a sync group here: 'coffer export' and 'coffer import', or 'coffer push' and 'coffer pull'",
        "generate":
            "restic's generate is 'coffer completion bash|zsh|fish'; the man pages are in docs/man (Tools/install installs them)",
        "unlock":
            "coffer leaves no lock behind: a command that was killed holds nothing ('coffer gc' frees what it wrote)",
        "version": "coffer prints its version with 'coffer --version'",
    ]

    /// restic's options that `coffer` names otherwise, by name without dashes.
    static let options: [String: String] = [
        "r": "restic's -r/--repo is --vault DIR (or $COFFER_VAULT)",
        "repo": "restic's --repo is --vault DIR (or $COFFER_VAULT)",
        "repository-file": "restic's --repository-file is --vault DIR (or $COFFER_VAULT)",
        "password-file": "restic's --password-file is --passphrase-file FILE (or $COFFER_PASSPHRASE)",
        "p": "restic's -p/--password-file is --passphrase-file FILE (or $COFFER_PASSPHRASE)",
        "password-command": "give the command's output as --passphrase-file <(COMMAND), or in $COFFER_PASSPHRASE",
        "v": "coffer shows progress on a terminal without -v, and -q hides it",
        "verbose": "coffer shows progress on a terminal without --verbose, and -q hides it",
        "prune": "'coffer forget' frees what it drops at once: no --prune is needed",
        "target": "only 'coffer restore' takes --target DIR (as its DIR argument)",
        "no-cache": "coffer keeps no cache",
        "cache-dir": "coffer keeps no cache",
        "t": "restic's -t/--target is restore's DIR argument (or --target DIR)",
    ]
}
