/* sha256.h - sandbox/'s own: SHA-256, for cache keys, header records and image digests (through sandbox.h) */
#ifndef CUKIT_SANDBOX_SHA256_H
#define CUKIT_SANDBOX_SHA256_H

#include <stddef.h>
#include <stdint.h>

/* A hash in progress: init, update any number of times, final once. */
typedef struct {
    uint32_t h[8];
    uint64_t bytes;
    unsigned char buf[64];
    size_t used;
} cukit_sha256;

void cukit_sha256_init(cukit_sha256 *c);
void cukit_sha256_update(cukit_sha256 *c, const void *data, size_t n);
/* The digest into out; c must be initialized again before more use. */
void cukit_sha256_final(cukit_sha256 *c, unsigned char out[32]);
/* Feed one field, length first, so ("ab","c") and ("a","bc") differ. */
void cukit_sha256_field(cukit_sha256 *c, const char *s, size_t n);
/* A digest as 64 lowercase hex digits and a NUL. */
void cukit_sha256_hex(const unsigned char d[32], char out[65]);

#endif /* CUKIT_SANDBOX_SHA256_H */
