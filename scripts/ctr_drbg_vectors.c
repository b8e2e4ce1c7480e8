/*
 * Known answers for large CTR_DRBG Generate calls, from an independent implementation:
 * OpenSSL 3's EVP_RAND "CTR-DRBG" fed fixed entropy and nonce by a "TEST-RAND" parent, the
 * way OpenSSL's own test/drbgtest.c and evp_test do. Writes tests/data/ctr_drbg_openssl.txt
 * on stdout (see scripts/ctr_drbg_vectors.sh, which compiles and runs this).
 *
 * Before printing anything it checks its own reading of the EVP_RAND API and exits non-zero if
 * one check fails:
 *   - four NIST CAVP records (one per AES size, df and no df, with and without reseed, all with
 *     personalization and additional input) come out as published;
 *   - every byte of the entropy input and of the nonce is used (dropping the last byte changes
 *     the output), so the recorded inputs are exactly what OpenSSL consumed;
 *   - a request above OpenSSL's max_request is the same as two requests with the same
 *     additional input (the convention our generate_with follows for > 64 KiB).
 * Automatic reseeding (request count, time) is switched off; every reseed is explicit.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>

/* Outputs up to this many bytes are printed in full; longer ones as their SHA-256. */
#define MAX_HEX_OUTPUT 4096
/* The largest request made (65,536 + 100 bytes: above CTR-DRBG's max_request of 2^16). */
#define MAX_OUT (65536 + 100)

static void die(const char *what)
{
    fprintf(stderr, "ctr_drbg_vectors: %s\n", what);
    ERR_print_errors_fp(stderr);
    exit(1);
}

typedef struct {
    unsigned char b[256];
    size_t n;
} bytes;

static bytes from_hex(const char *h)
{
    bytes r = { { 0 }, strlen(h) / 2 };
    if (strlen(h) % 2 != 0 || r.n > sizeof(r.b))
        die("bad hex literal");
    for (size_t i = 0; i < r.n; i++)
        if (sscanf(h + 2 * i, "%2hhx", &r.b[i]) != 1)
            die("bad hex literal");
    return r;
}

/* Deterministic input bytes: SHA-256(label || i) for i = 0, 1, ... truncated to n. */
static bytes derive(const char *label, size_t n)
{
    bytes r = { { 0 }, n };
    unsigned char block[EVP_MAX_MD_SIZE];
    unsigned int blen;
    if (n > sizeof(r.b))
        die("derived input too long");
    for (size_t off = 0, i = 0; off < n; off += 32, i++) {
        unsigned char msg[256];
        size_t llen = strlen(label);
        if (llen + 1 > sizeof(msg))
            die("label too long");
        memcpy(msg, label, llen);
        msg[llen] = (unsigned char)i;
        if (!EVP_Digest(msg, llen + 1, block, &blen, EVP_sha256(), NULL))
            die("sha256");
        memcpy(r.b + off, block, n - off < 32 ? n - off : 32);
    }
    return r;
}

static void print_hex(const unsigned char *p, size_t n)
{
    if (n == 0) {
        fputs("-", stdout);
        return;
    }
    for (size_t i = 0; i < n; i++)
        printf("%02x", p[i]);
}

/* ---------- one OpenSSL CTR-DRBG over a TEST-RAND parent ---------- */

typedef struct {
    EVP_RAND_CTX *parent, *ctr;
} drbg;

static void set_test_entropy(EVP_RAND_CTX *parent, const bytes *e)
{
    OSSL_PARAM p[2];
    p[0] = OSSL_PARAM_construct_octet_string(OSSL_RAND_PARAM_TEST_ENTROPY, (void *)e->b, e->n);
    p[1] = OSSL_PARAM_construct_end();
    if (!EVP_RAND_CTX_set_params(parent, p))
        die("set TEST_ENTROPY");
}

/* instantiate(entropy, nonce, personalization); nonce must be empty without df. */
static drbg drbg_new(int keybits, int use_df, const bytes *entropy, const bytes *nonce,
    const bytes *pers)
{
    drbg d;
    unsigned int parent_strength = 256;
    unsigned int reseed_requests = 0;
    uint64_t reseed_time = 0;
    char cipher[16];
    OSSL_PARAM p[5], *q = p;

    EVP_RAND *test = EVP_RAND_fetch(NULL, "TEST-RAND", NULL);
    EVP_RAND *ctr = EVP_RAND_fetch(NULL, "CTR-DRBG", NULL);
    if (test == NULL || ctr == NULL)
        die("fetch TEST-RAND / CTR-DRBG");
    d.parent = EVP_RAND_CTX_new(test, NULL);
    if (d.parent == NULL)
        die("new TEST-RAND");
    *q++ = OSSL_PARAM_construct_uint(OSSL_RAND_PARAM_STRENGTH, &parent_strength);
    *q++ = OSSL_PARAM_construct_octet_string(OSSL_RAND_PARAM_TEST_ENTROPY, (void *)entropy->b,
        entropy->n);
    if (nonce->n > 0)
        *q++ = OSSL_PARAM_construct_octet_string(OSSL_RAND_PARAM_TEST_NONCE, (void *)nonce->b,
            nonce->n);
    *q = OSSL_PARAM_construct_end();
    if (!EVP_RAND_instantiate(d.parent, parent_strength, 0, NULL, 0, p))
        die("instantiate TEST-RAND");

    d.ctr = EVP_RAND_CTX_new(ctr, d.parent);
    if (d.ctr == NULL)
        die("new CTR-DRBG");
    snprintf(cipher, sizeof(cipher), "AES-%d-CTR", keybits);
    q = p;
    *q++ = OSSL_PARAM_construct_utf8_string(OSSL_DRBG_PARAM_CIPHER, cipher, 0);
    *q++ = OSSL_PARAM_construct_int(OSSL_DRBG_PARAM_USE_DF, &use_df);
    *q++ = OSSL_PARAM_construct_uint(OSSL_DRBG_PARAM_RESEED_REQUESTS, &reseed_requests);
    *q++ = OSSL_PARAM_construct_uint64(OSSL_DRBG_PARAM_RESEED_TIME_INTERVAL, &reseed_time);
    *q = OSSL_PARAM_construct_end();
    if (!EVP_RAND_CTX_set_params(d.ctr, p))
        die("set CTR-DRBG params");
    /* Never NULL: with NULL OpenSSL substitutes its own default personalization. */
    if (!EVP_RAND_instantiate(d.ctr, keybits, 0, pers->b, pers->n, NULL))
        return (drbg) { d.parent, NULL };
    EVP_RAND_free(test);
    EVP_RAND_free(ctr);
    return d;
}

static void drbg_free(drbg *d)
{
    EVP_RAND_CTX_free(d->ctr);
    EVP_RAND_CTX_free(d->parent);
}

static void drbg_generate(drbg *d, unsigned char *out, size_t n, const bytes *adin)
{
    if (!EVP_RAND_generate(d->ctr, out, n, 0, 0, adin->n ? adin->b : NULL, adin->n))
        die("generate");
}

/* reseed(entropy, additional): the new entropy comes from the parent, as in evp_test. */
static void drbg_reseed(drbg *d, const bytes *entropy, const bytes *adin)
{
    set_test_entropy(d->parent, entropy);
    if (!EVP_RAND_reseed(d->ctr, 0, NULL, 0, adin->n ? adin->b : NULL, adin->n))
        die("reseed");
}

/* ---------- self-checks ---------- */

typedef struct {
    const char *name;
    int keybits, use_df, reseed;
    const char *entropy, *nonce, *pers, *entropy_reseed, *adin_reseed, *adin1, *adin2, *returned;
} cavp_record;

/* COUNT = 0 of the group with the longest personalization and additional input. */
static const cavp_record CAVP[] = {
    { "no_reseed [AES-256 use df] PersonalizationStringLen=256 AdditionalInputLen=256", 256, 1, 0,
        "87b56e964eba227154724bb9484b812d3e2c0c43b3d17f6098d9526e16e6d0ef",
        "9bea6a7ff2358df142e6c23e2157fb83",
        "9860b432edd58d1ccbfeecbce99ffaee7d935a614860d4e965bd67041403096b", "", "",
        "99a5cc87924e8ea65a596f81fd17d63f5b4542fe6e8e1511b5d35c835dfadb0b",
        "9a8dec54734a34582a2332f3452e82313524c3e0dfb485faeac6ca5fc0ff504d",
        "dbc6a2330b19b5cddd8cd6392ec1fb508678c805e87d1aca07ac265007632503"
        "044a00610c79d98375afa7ab4cca1a90989cbfe7c674af5d823ced11c47e9af6" },
    { "pr_false [AES-128 no df] PersonalizationStringLen=256 AdditionalInputLen=256", 128, 0, 1,
        "289e5c8283cbd7dbe707255cb3cf2907d8a5ce5b347314966f9b2bebb1a1e200", "",
        "7f7b59f23510b976fe155d047525c94e2dacb30d77ac8b09281544dd815d5293",
        "98c522028f36fc6b85a8f3c003efd4b130dd90180ec81cf7c67d4c53d10f0022",
        "f7a0378328d939f0f8521e39409d7175d87319c7597a9050414f7adc392a328d",
        "19c286f5b36194d1cc62c0188140bc9d61d2a9c5d88bb5aebc224bfb04dfca83",
        "820650c3201d347f5b20d3d25d1c8c7bef4d9f66a5a04c7dd9d669e95182a0c4",
        "79a79d44edada58e3fc12a4e36ae900eeace290265f01262f40f2958a70dcbd4"
        "d4185f708c088ede7ff8c8375f44f4012f2512d38328a5df171a17029d90f185" },
    { "pr_false [AES-192 use df] PersonalizationStringLen=256 AdditionalInputLen=256", 192, 1, 1,
        "c4b1e6a99587eacd7ec8517f40f9433ca432cea8686433f0", "d03a29e548e58ca7cbf0ac707b1464e3",
        "0daaead21779b2a428d2b7fb12d9ab8316899edbe26b5460de1549c99e4781c9",
        "2229144c1b4efb79ab5fe079cda26bc33acbb2a0a87f642c",
        "f116a683ca485fda846a598b8d9b079e78c2828286ad530bf01f693cc8af9f84",
        "7c89de353298935bd26aa18517355313df0630da5f45ea0240e809179363080b",
        "e978b8fe56afc908bed129a46d57a8698d66034d4dbcc7aba3a33d5796fb7559",
        "8ce7e9589c2975fd6989a450aa65da9114e515777c97351da037ccb72d4987eb"
        "69c680411724ed602e6ac76cd2d085725616c92777a4664d43a59c3ae9946134" },
    { "no_reseed [AES-192 no df] PersonalizationStringLen=320 AdditionalInputLen=320", 192, 0, 0,
        "8db47ca284294daeb303e6459422e32577ca539c00fead8839d42946bad8eb30e489c6d858763a28", "",
        "c2491a6ce1ef9bd13eb66a86c0f5be3d2f3239bf7f713e830e8ae8907a2084f873ed3f5eddf5b569", "", "",
        "e9a3f24180345a0c0680aacdb89ce7cf841c7ad547ef92dad54f8262445e2f0c54c8f8e42350f79c",
        "e2427b93738424c0fce14cb6c5f1d6b6a0532787157b6d907bc55d1c9a670494776212a643a9fb2c",
        "494b1957ab382b382054f54bb62f0b5b464afb3b18492c60809c26e86e45b6b9"
        "fa44524dd89ecdca99c60e68ed107ff336be1591cadd6fd7e35f742611809f2e" },
};

static void check_cavp(void)
{
    for (size_t i = 0; i < sizeof(CAVP) / sizeof(CAVP[0]); i++) {
        const cavp_record *r = &CAVP[i];
        bytes e = from_hex(r->entropy), n = from_hex(r->nonce), p = from_hex(r->pers);
        bytes a1 = from_hex(r->adin1), a2 = from_hex(r->adin2), want = from_hex(r->returned);
        unsigned char out[64];
        drbg d = drbg_new(r->keybits, r->use_df, &e, &n, &p);
        if (d.ctr == NULL)
            die("CAVP self-check: instantiate failed");
        if (r->reseed) {
            bytes er = from_hex(r->entropy_reseed), ar = from_hex(r->adin_reseed);
            drbg_reseed(&d, &er, &ar);
        }
        drbg_generate(&d, out, sizeof(out), &a1);
        drbg_generate(&d, out, sizeof(out), &a2);
        if (want.n != sizeof(out) || memcmp(out, want.b, sizeof(out)) != 0) {
            fprintf(stderr, "CAVP self-check failed: %s\n", r->name);
            exit(1);
        }
        drbg_free(&d);
    }
}

/* First 64 output bytes after instantiate, or all zero if instantiate is refused. */
static void first_output(int keybits, int use_df, const bytes *e, const bytes *n,
    const bytes *p, unsigned char out[64])
{
    bytes none = { { 0 }, 0 };
    drbg d = drbg_new(keybits, use_df, e, n, p);
    memset(out, 0, 64);
    if (d.ctr != NULL)
        drbg_generate(&d, out, 64, &none);
    ERR_clear_error();
    drbg_free(&d);
}

/* Every byte of entropy and nonce reaches the mechanism (df: OpenSSL does not truncate them). */
static void check_inputs_fully_used(int keybits, const bytes *e, const bytes *n, const bytes *p)
{
    unsigned char full[64], shorter[64];
    bytes e1 = *e, n1 = *n;
    e1.n--;
    n1.n--;
    first_output(keybits, 1, e, n, p, full);
    first_output(keybits, 1, &e1, n, p, shorter);
    if (memcmp(full, shorter, 64) == 0)
        die("self-check: OpenSSL did not use the whole entropy input");
    first_output(keybits, 1, e, &n1, p, shorter);
    if (memcmp(full, shorter, 64) == 0)
        die("self-check: OpenSSL did not use the whole nonce");
}

/* A request above max_request (2^16 bytes) equals two requests with the same additional input. */
static void check_split(int keybits, int use_df, const bytes *e, const bytes *n, const bytes *a)
{
    static unsigned char whole[MAX_OUT], parts[MAX_OUT];
    bytes none = { { 0 }, 0 };
    size_t max_request = 0;
    OSSL_PARAM q[2] = { OSSL_PARAM_construct_size_t(OSSL_RAND_PARAM_MAX_REQUEST, &max_request),
        OSSL_PARAM_construct_end() };
    drbg x = drbg_new(keybits, use_df, e, n, &none);
    drbg y = drbg_new(keybits, use_df, e, n, &none);
    if (x.ctr == NULL || y.ctr == NULL)
        die("split self-check: instantiate");
    if (!EVP_RAND_CTX_get_params(x.ctr, q) || max_request != 65536)
        die("self-check: CTR-DRBG max_request is not 65536");
    drbg_generate(&x, whole, MAX_OUT, a);
    drbg_generate(&y, parts, 65536, a);
    drbg_generate(&y, parts + 65536, MAX_OUT - 65536, a);
    if (memcmp(whole, parts, MAX_OUT) != 0)
        die("self-check: a request above max_request is not two requests");
    drbg_free(&x);
    drbg_free(&y);
}

/* ---------- the vectors ---------- */

/* One step of a case: 'G' generate(len, additional), 'R' reseed(entropy, additional).
 * Input lengths are given per df mode; -1 means seedlen, -2 means entropy length. */
typedef struct {
    char op;
    size_t len;
    int adin_df, adin_nodf;
} step;

typedef struct {
    int pers_df, pers_nodf;
    step steps[6];
} case_def;

static const case_def CASES[] = {
    /* 0: no personalization, no additional input: a large request then a small one. */
    { 0, 0, { { 'G', 1500, 0, 0 }, { 'G', 64, 0, 0 } } },
    /* 1: personalization and additional input on both requests; 4 KiB then 1,500 bytes. */
    { 37, -1, { { 'G', 4096, 48, -1 }, { 'G', 1500, 77, -1 } } },
    /* 2: short personalization (zero-padded without df), a reseed between large requests,
     *    just above the fused limit (257), one byte past a block (1025). */
    { 100, 20, { { 'G', 1025, 33, 11 }, { 'R', 0, 64, -1 }, { 'G', 4096, 0, 0 },
        { 'G', 257, 16, 16 } } },
    /* 3: one batch exactly (1024), reseed without additional input, a request above
     *    2^16 bytes (split in two Generates), the largest fused request (256), then 1023. */
    { 0, 0, { { 'G', 1024, 0, 0 }, { 'R', 0, 0, 0 }, { 'G', 65636, 40, -1 },
        { 'G', 256, 0, 0 }, { 'G', 1023, 200, 7 } } },
};

static size_t resolve(int n, size_t seedlen)
{
    return n == -1 ? seedlen : (size_t)n;
}

static void emit_variant(int keybits, int use_df, int *count)
{
    static unsigned char out[MAX_OUT];
    size_t keylen = keybits / 8, seedlen = keylen + 16;
    /* The service's input lengths (Drbg::ENTROPY_LEN, NONCE_LEN): 1.5 x and 0.5 x the
     * security strength with df; without df, entropy is exactly seedlen and no nonce. */
    size_t entropy_len = use_df ? keylen * 3 / 2 : seedlen;
    size_t nonce_len = use_df ? keylen / 2 : 0;
    char label[128];

    printf("\n[AES-%d %s]\n", keybits, use_df ? "use df" : "no df");
    for (size_t c = 0; c < sizeof(CASES) / sizeof(CASES[0]); c++) {
        const case_def *cd = &CASES[c];
        bytes e, n, p;
        drbg d;
        int reseeds = 0, adins = 0;

#define INPUT(var, what, len)                                                                  \
    do {                                                                                       \
        snprintf(label, sizeof(label), "drbgd ctr_drbg_openssl AES-%d %s case %zu %s", keybits, \
            use_df ? "df" : "nodf", c, what);                                                 \
        var = derive(label, len);                                                              \
    } while (0)

        INPUT(e, "entropy", entropy_len);
        INPUT(n, "nonce", nonce_len);
        INPUT(p, "personalization", resolve(use_df ? cd->pers_df : cd->pers_nodf, seedlen));
        if (use_df && c == 0)
            check_inputs_fully_used(keybits, &e, &n, &p);
        d = drbg_new(keybits, use_df, &e, &n, &p);
        if (d.ctr == NULL)
            die("instantiate");
        printf("\nCOUNT = %d\nInstantiate = ", (*count)++);
        print_hex(e.b, e.n);
        putchar(' ');
        print_hex(n.b, n.n);
        putchar(' ');
        print_hex(p.b, p.n);
        putchar('\n');
        for (const step *s = cd->steps; s->op != 0; s++) {
            bytes a;
            char what[32];
            snprintf(what, sizeof(what), "additional %d", adins++);
            INPUT(a, what, resolve(use_df ? s->adin_df : s->adin_nodf, seedlen));
            if (s->op == 'R') {
                bytes er;
                snprintf(what, sizeof(what), "reseed entropy %d", reseeds++);
                INPUT(er, what, entropy_len);
                drbg_reseed(&d, &er, &a);
                fputs("Reseed = ", stdout);
                print_hex(er.b, er.n);
                putchar(' ');
                print_hex(a.b, a.n);
                putchar('\n');
                continue;
            }
            if (s->len > MAX_OUT)
                die("request too long");
            drbg_generate(&d, out, s->len, &a);
            printf("Generate = %zu ", s->len);
            print_hex(a.b, a.n);
            putchar(' ');
            if (s->len <= MAX_HEX_OUTPUT) {
                print_hex(out, s->len);
            } else {
                unsigned char md[EVP_MAX_MD_SIZE];
                unsigned int mdlen;
                if (!EVP_Digest(out, s->len, md, &mdlen, EVP_sha256(), NULL))
                    die("sha256");
                fputs("sha256:", stdout);
                print_hex(md, mdlen);
            }
            putchar('\n');
            if (s->len > 65536)
                check_split(keybits, use_df, &e, &n, &a);
        }
#undef INPUT
        drbg_free(&d);
    }
}

int main(void)
{
    static const int KEYBITS[] = { 128, 192, 256 };
    int count = 0;

    check_cavp();
    printf("# Known answers for large CTR_DRBG Generate calls, from an independent implementation,\n"
           "# %s:\n"
           "# EVP_RAND \"CTR-DRBG\" (AES-128/192/256-CTR, with and without the derivation function)\n"
           "# over a \"TEST-RAND\" parent holding the fixed entropy input and nonce, as in OpenSSL's\n"
           "# own test/drbgtest.c and evp_test. Produced by scripts/ctr_drbg_vectors.sh\n"
           "# (scripts/ctr_drbg_vectors.c); regenerate with that script, do not edit.\n"
           "# Automatic reseeding is off (reseed_requests = 0, reseed_time_interval = 0); prediction\n"
           "# resistance is off; the personalization is never NULL (empty means empty).\n"
           "# Inputs are SHA-256 expansions of fixed labels; entropy is 1.5 x keylen bytes with df\n"
           "# (the service's Drbg::ENTROPY_LEN) and seedlen = keylen + 16 bytes without; the nonce\n"
           "# is keylen / 2 bytes with df and absent without.\n"
           "# Before writing, the harness reproduced four NIST CAVP records (AES-128/192/256, df and\n"
           "# no df, with reseed), checked that dropping the last entropy or nonce byte changes the\n"
           "# output, and that a request above max_request (65536 bytes) equals two requests with\n"
           "# the same additional input.\n"
           "#\n"
           "# Format. A section [AES-<bits> use df] or [AES-<bits> no df] names the mechanism. Each\n"
           "# record (COUNT = n) is one fresh DRBG and its calls, in order; fields are lowercase hex,\n"
           "# '-' is the empty string:\n"
           "#   Instantiate = <entropy> <nonce> <personalization>\n"
           "#   Generate = <bytes requested, decimal> <additional input> <output>\n"
           "#   Reseed = <entropy> <additional input>\n"
           "# An output longer than %d bytes is given as sha256:<SHA-256 of the output>.\n"
           "# Generate is one EVP_RAND_generate call (prediction_resistance = 0); OpenSSL splits a\n"
           "# request above 65536 bytes into Generates of at most 65536 bytes, each with the same\n"
           "# additional input. Reseed sets the parent's entropy and calls EVP_RAND_reseed with the\n"
           "# additional input and no direct entropy.\n",
        OpenSSL_version(OPENSSL_VERSION), MAX_HEX_OUTPUT);
    for (int df = 1; df >= 0; df--)
        for (size_t k = 0; k < 3; k++)
            emit_variant(KEYBITS[k], df, &count);
    if (fflush(stdout) != 0)
        die("write");
    fprintf(stderr, "ctr_drbg_vectors: %d records, self-checks passed\n", count);
    return 0;
}
