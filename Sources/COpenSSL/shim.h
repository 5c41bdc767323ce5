// OpenSSL (libcrypto) for Swift. Debian package: libssl-dev. Only Sources/Coffer/Crypto/ imports this module.
//
// OpenSSL 3 takes algorithm parameters as OSSL_PARAM arrays keyed by string macros; the arrays hold
// pointers to those names and to the caller's buffers for the duration of one call, which Swift's
// temporary string bridging cannot guarantee. These helpers build the arrays on the C stack and make
// exactly one EVP call each; they return that call's result (1 on success) unchanged so the Swift
// funnel in Crypto/OpenSSL.swift checks it like any other.
#ifndef COFFER_COPENSSL_SHIM_H
#define COFFER_COPENSSL_SHIM_H

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/params.h>
#include <openssl/rand.h>
#include <stdint.h>

/// Keys an HMAC context for SHA-256. Passing a NULL key re-initialises it with its current key.
static inline int coffer_hmac_sha256_init(EVP_MAC_CTX *ctx, const void *key, size_t key_length) {
    OSSL_PARAM params[2];
    params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)"SHA256", 0);
    params[1] = OSSL_PARAM_construct_end();
    return EVP_MAC_init(ctx, (const unsigned char *)key, key_length, params);
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
