// OpenSSL (libcrypto) for Swift. Debian package: libssl-dev. Only Sources/CofferCore/Crypto/ imports this module.
//
// OpenSSL 3 takes algorithm parameters as OSSL_PARAM arrays keyed by string macros; the arrays hold
// pointers to those names and to the caller's buffers for the duration of one call, which Swift's
// temporary string bridging cannot guarantee. These helpers build the arrays on the C stack and make
// exactly one EVP call each; they return that call's result (1 on success) unchanged so the Swift
// funnel in Crypto/OpenSSL.swift checks it like any other.
#ifndef COFFER_COPENSSL_SHIM_H
#define COFFER_COPENSSL_SHIM_H

// The HMAC below uses the low-level SHA256_* functions, deprecated (not removed) in OpenSSL 3 in
// favour of EVP. EVP's HMAC allocates and copies digest contexts on every message (EVP_MAC_init and
// EVP_MAC_final each duplicate one), which made up most of the cost of a keychain item id; the
// low-level context is a plain struct that copies by assignment. This keeps the declarations
// visible without deprecation attributes.
#define OPENSSL_SUPPRESS_DEPRECATED 1

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/params.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <stdint.h>
#include <string.h>

/// An HMAC-SHA256 key prepared once (RFC 2104): the SHA-256 states after absorbing the key padded
/// with ipad and with opad. Equivalent to the key: wipe it with OPENSSL_cleanse before freeing it.
typedef struct {
    SHA256_CTX inner;
    SHA256_CTX outer;
} coffer_hmac_sha256_key;

/// Prepares `state` for `key` (hashed first when longer than a block). Returns 1 on success.
static inline int coffer_hmac_sha256_prepare(coffer_hmac_sha256_key *state, const void *key, size_t key_length) {
    unsigned char block[SHA256_CBLOCK];
    unsigned char pad[SHA256_CBLOCK];
    int ok = 1;
    memset(block, 0, sizeof block);
    if (key_length > SHA256_CBLOCK) {
        ok = SHA256((const unsigned char *)key, key_length, block) != NULL;
    } else if (key_length > 0) {
        memcpy(block, key, key_length);
    }
    for (size_t i = 0; i < SHA256_CBLOCK; i++) pad[i] = block[i] ^ 0x36;
    ok = ok && SHA256_Init(&state->inner) && SHA256_Update(&state->inner, pad, sizeof pad);
    for (size_t i = 0; i < SHA256_CBLOCK; i++) pad[i] = block[i] ^ 0x5c;
    ok = ok && SHA256_Init(&state->outer) && SHA256_Update(&state->outer, pad, sizeof pad);
    OPENSSL_cleanse(block, sizeof block);
    OPENSSL_cleanse(pad, sizeof pad);
    return ok;
}

/// Starts a message: `work` becomes a copy of the inner state. Returns 1.
static inline int coffer_hmac_sha256_start(const coffer_hmac_sha256_key *state, SHA256_CTX *work) {
    *work = state->inner;
    return 1;
}

/// Adds message bytes. Returns 1 on success.
static inline int coffer_hmac_sha256_update(SHA256_CTX *work, const void *data, size_t length) {
    return SHA256_Update(work, data, length);
}

/// Ends the message, writes the 32-byte tag to `out`, and wipes `work`. Returns 1 on success.
static inline int coffer_hmac_sha256_finish(const coffer_hmac_sha256_key *state, SHA256_CTX *work,
                                            unsigned char *out) {
    unsigned char inner[SHA256_DIGEST_LENGTH];
    int ok = SHA256_Final(inner, work);
    *work = state->outer;
    ok = ok && SHA256_Update(work, inner, sizeof inner) && SHA256_Final(out, work);
    OPENSSL_cleanse(inner, sizeof inner);
    OPENSSL_cleanse(work, sizeof *work);
    return ok;
}

/// HKDF-SHA256 extract-and-expand (RFC 5869) into `out`.
static inline int coffer_hkdf_sha256(EVP_KDF_CTX *ctx, void *out, size_t out_length,
                                     const void *ikm, size_t ikm_length,
                                     const void *salt, size_t salt_length,
                                     const void *info, size_t info_length) {
    OSSL_PARAM params[5];
    OSSL_PARAM *p = params;
    *p++ = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, (char *)"SHA256", 0);
    *p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, (void *)ikm, ikm_length);
    if (salt_length > 0) {
        *p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, (void *)salt, salt_length);
    }
    if (info_length > 0) {
        *p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, (void *)info, info_length);
    }
    *p = OSSL_PARAM_construct_end();
    return EVP_KDF_derive(ctx, (unsigned char *)out, out_length, params);
}

/// scrypt (RFC 7914) into `out`; `max_memory` bounds what OpenSSL may allocate.
static inline int coffer_scrypt(EVP_KDF_CTX *ctx, void *out, size_t out_length,
                                const void *password, size_t password_length,
                                const void *salt, size_t salt_length,
                                uint64_t n, uint32_t r, uint32_t p, uint64_t max_memory) {
    static const unsigned char empty = 0;
    OSSL_PARAM params[7];
    params[0] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_PASSWORD,
                                                  (void *)(password_length ? password : &empty), password_length);
    params[1] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT,
                                                  (void *)(salt_length ? salt : &empty), salt_length);
    params[2] = OSSL_PARAM_construct_uint64(OSSL_KDF_PARAM_SCRYPT_N, &n);
    params[3] = OSSL_PARAM_construct_uint32(OSSL_KDF_PARAM_SCRYPT_R, &r);
    params[4] = OSSL_PARAM_construct_uint32(OSSL_KDF_PARAM_SCRYPT_P, &p);
    params[5] = OSSL_PARAM_construct_uint64(OSSL_KDF_PARAM_SCRYPT_MAXMEM, &max_memory);
    params[6] = OSSL_PARAM_construct_end();
    return EVP_KDF_derive(ctx, (unsigned char *)out, out_length, params);
}

#endif
