/*
 * OpenSSL 3's own Hash_DRBG or HMAC_DRBG (EVP_RAND "HASH-DRBG" / "HMAC-DRBG") writing BYTES of
 * output to stdout in Generates of its max_request (65,536 bytes, SP 800-90A's 2^19 bits), the
 * reference that scripts/sha_drbg_bench.sh times `drbgd generate` against. It is seeded once
 * from a "TEST-RAND" parent with fixed entropy (as scripts/sha_drbg_vectors.c does) and never
 * reseeds, so only the mechanism's Generate is timed, as in drbgd's (whose reseeds come from
 * its byte limit, 1 GiB by default, and cost one getrandom each).
 *
 * Usage: sha_drbg_bench HASH-DRBG|HMAC-DRBG SHA2-256|SHA2-512 BYTES > /dev/null
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#define MAX_REQUEST 65536

static void die(const char *what)
{
    fprintf(stderr, "sha_drbg_bench: %s\n", what);
    ERR_print_errors_fp(stderr);
    exit(1);
}

int main(int argc, char **argv)
{
    static unsigned char entropy[64], nonce[32], out[MAX_REQUEST];
    unsigned int strength = 256, reseed_requests = 0;
    uint64_t reseed_time = 0;
    OSSL_PARAM p[6], *q = p;
    if (argc != 4)
        die("usage: sha_drbg_bench HASH-DRBG|HMAC-DRBG SHA2-256|SHA2-512 BYTES");
    unsigned long long left = strtoull(argv[3], NULL, 10);
    for (size_t i = 0; i < sizeof(entropy); i++)
        entropy[i] = (unsigned char)(i * 37 + 11);
    for (size_t i = 0; i < sizeof(nonce); i++)
        nonce[i] = (unsigned char)(i * 91 + 5);

    EVP_RAND *test = EVP_RAND_fetch(NULL, "TEST-RAND", NULL);
    EVP_RAND *mech = EVP_RAND_fetch(NULL, argv[1], NULL);
    if (test == NULL || mech == NULL)
        die("fetch TEST-RAND or the mechanism");
    EVP_RAND_CTX *parent = EVP_RAND_CTX_new(test, NULL);
    if (parent == NULL)
        die("new TEST-RAND");
    *q++ = OSSL_PARAM_construct_uint(OSSL_RAND_PARAM_STRENGTH, &strength);
    *q++ = OSSL_PARAM_construct_octet_string(OSSL_RAND_PARAM_TEST_ENTROPY, entropy, sizeof(entropy));
    *q++ = OSSL_PARAM_construct_octet_string(OSSL_RAND_PARAM_TEST_NONCE, nonce, sizeof(nonce));
    *q = OSSL_PARAM_construct_end();
    if (!EVP_RAND_instantiate(parent, strength, 0, NULL, 0, p))
        die("instantiate TEST-RAND");

    EVP_RAND_CTX *drbg = EVP_RAND_CTX_new(mech, parent);
    if (drbg == NULL)
        die("new DRBG");
    q = p;
    if (strcmp(argv[1], "HMAC-DRBG") == 0)
        *q++ = OSSL_PARAM_construct_utf8_string(OSSL_DRBG_PARAM_MAC, "HMAC", 0);
    *q++ = OSSL_PARAM_construct_utf8_string(OSSL_DRBG_PARAM_DIGEST, argv[2], 0);
    *q++ = OSSL_PARAM_construct_uint(OSSL_DRBG_PARAM_RESEED_REQUESTS, &reseed_requests);
    *q++ = OSSL_PARAM_construct_uint64(OSSL_DRBG_PARAM_RESEED_TIME_INTERVAL, &reseed_time);
    *q = OSSL_PARAM_construct_end();
    if (!EVP_RAND_CTX_set_params(drbg, p))
        die("set the DRBG's parameters");
    if (!EVP_RAND_instantiate(drbg, 256, 0, (const unsigned char *)"bench", 5, NULL))
        die("instantiate the DRBG");
    while (left > 0) {
        size_t n = left < MAX_REQUEST ? (size_t)left : MAX_REQUEST;
        if (!EVP_RAND_generate(drbg, out, n, 256, 0, NULL, 0))
            die("generate");
        if (fwrite(out, 1, n, stdout) != n)
            die("write");
        left -= n;
    }
    EVP_RAND_CTX_free(drbg);
    EVP_RAND_CTX_free(parent);
    EVP_RAND_free(test);
    EVP_RAND_free(mech);
    return 0;
}
