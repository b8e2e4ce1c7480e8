/*
 * Known answers for Hash_DRBG and HMAC_DRBG (SP 800-90A 10.1.1, 10.1.2) from an independent
 * implementation: OpenSSL 3's EVP_RAND "HASH-DRBG" and "HMAC-DRBG" fed fixed entropy and nonce
 * by a "TEST-RAND" parent, the way OpenSSL's own test/drbgtest.c and evp_test do (and the way
 * scripts/ctr_drbg_vectors.c drives CTR-DRBG). Writes tests/data/sha_drbg_openssl.txt on stdout
 * (see scripts/sha_drbg_vectors.sh, which compiles and runs this).
 *
 * Every hash drbgd's two mechanisms take (src/drbg/hash_drbg.rs, hmac_drbg.rs; the CAVP tests in
 * tests/kat.rs run them all): SHA-1, SHA-224, SHA-256, SHA-384, SHA-512, SHA-512/224 and
 * SHA-512/256. Inputs are SHA-256 expansions of fixed labels, and so are the lengths: entropy
 * from OpenSSL's minimum (security strength / 8 bytes) up, nonces from 1 byte, personalization
 * and additional input often empty, Generates from 1 byte to 65,636 (64 KiB + 100), reseeds in
 * a third of the records.
 *
 * Before printing anything it checks its own reading of the EVP_RAND API and exits non-zero if
 * one check fails:
 *   - fourteen NIST CAVP records (one per mechanism and hash, half with a reseed, all with
 *     personalization and additional input) come out as published;
 *   - in every record, every byte of every input is used: changing the last byte of the
 *     entropy input, the nonce, the personalization, any reseed's entropy input or any
 *     additional input changes the record's outputs, so the recorded inputs are exactly what
 *     OpenSSL consumed;
 *   - for every mechanism and hash, max_request is 65536 bytes, a request above it is the same
 *     as a 65,536-byte request and the rest with the same additional input (the convention of
 *     drbgd's generate for > 64 KiB), and a 0-byte request leaves the state as it was.
 * Automatic reseeding (request count, time) is switched off; every reseed is explicit.
 */
#include <stdarg.h>
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
#define MAX_HEX_OUTPUT 128
/* OpenSSL's max_request for HASH-DRBG and HMAC-DRBG: 2^19 bits (SP 800-90A 10.1 table 2). */
#define MAX_REQUEST 65536
/* The largest request made: 100 bytes above max_request, so two Generates. */
#define MAX_OUT (MAX_REQUEST + 100)
/* Records per mechanism and hash. */
#define RECORDS 24
/* Calls (Generate or Reseed) per record, at most. */
#define MAX_STEPS 5

static void die(const char *what)
{
    fprintf(stderr, "sha_drbg_vectors: %s\n", what);
    ERR_print_errors_fp(stderr);
    exit(1);
}

typedef struct {
    unsigned char b[512];
    size_t n;
} bytes;

static const bytes NONE = { { 0 }, 0 };

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

/* A deterministic choice in [0, n): the first four bytes of SHA-256(label), big-endian, mod n. */
static size_t pick(size_t n, const char *fmt, ...)
{
    char label[200];
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(label, sizeof(label), fmt, ap);
    va_end(ap);
    if (!EVP_Digest(label, strlen(label), md, &mdlen, EVP_sha256(), NULL))
        die("sha256");
    return ((size_t)md[0] << 24 | (size_t)md[1] << 16 | (size_t)md[2] << 8 | md[3]) % n;
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

/* ---------- the mechanisms ---------- */

typedef struct {
    const char *name;    /* as NIST writes it (the section names, the CAVP files) */
    const char *openssl; /* as OpenSSL fetches it */
    size_t outlen;       /* bytes */
    unsigned int strength; /* bits: SP 800-90A 10.1 table 2, OpenSSL's EVP_RAND_get_strength */
} hash_def;

static const hash_def HASHES[] = {
    { "SHA-1", "SHA1", 20, 128 },
    { "SHA-224", "SHA2-224", 28, 192 },
    { "SHA-256", "SHA2-256", 32, 256 },
    { "SHA-384", "SHA2-384", 48, 256 },
    { "SHA-512", "SHA2-512", 64, 256 },
    { "SHA-512/224", "SHA2-512/224", 28, 192 },
    { "SHA-512/256", "SHA2-512/256", 32, 256 },
};
#define NHASHES (sizeof(HASHES) / sizeof(HASHES[0]))

static const char *const MECHANISMS[] = { "HASH-DRBG", "HMAC-DRBG" };

/* ---------- one OpenSSL HASH-DRBG or HMAC-DRBG over a TEST-RAND parent ---------- */

typedef struct {
    EVP_RAND_CTX *parent, *drbg;
} drbg;

static void set_test_entropy(EVP_RAND_CTX *parent, const bytes *e)
{
    OSSL_PARAM p[2];
    p[0] = OSSL_PARAM_construct_octet_string(OSSL_RAND_PARAM_TEST_ENTROPY, (void *)e->b, e->n);
    p[1] = OSSL_PARAM_construct_end();
    if (!EVP_RAND_CTX_set_params(parent, p))
        die("set TEST_ENTROPY");
}

/* instantiate(entropy, nonce, personalization); the DRBG is NULL if OpenSSL refuses. */
static drbg drbg_new(int hmac, const hash_def *h, const bytes *entropy, const bytes *nonce,
    const bytes *pers)
{
    drbg d;
    unsigned int parent_strength = 256;
    unsigned int reseed_requests = 0;
    uint64_t reseed_time = 0;
    OSSL_PARAM p[6], *q = p;

    EVP_RAND *test = EVP_RAND_fetch(NULL, "TEST-RAND", NULL);
    EVP_RAND *mech = EVP_RAND_fetch(NULL, MECHANISMS[hmac], NULL);
    if (test == NULL || mech == NULL)
        die("fetch TEST-RAND / HASH-DRBG / HMAC-DRBG");
    d.parent = EVP_RAND_CTX_new(test, NULL);
    if (d.parent == NULL)
        die("new TEST-RAND");
    *q++ = OSSL_PARAM_construct_uint(OSSL_RAND_PARAM_STRENGTH, &parent_strength);
    *q++ = OSSL_PARAM_construct_octet_string(OSSL_RAND_PARAM_TEST_ENTROPY, (void *)entropy->b,
        entropy->n);
    *q++ = OSSL_PARAM_construct_octet_string(OSSL_RAND_PARAM_TEST_NONCE, (void *)nonce->b,
        nonce->n);
    *q = OSSL_PARAM_construct_end();
    if (!EVP_RAND_instantiate(d.parent, parent_strength, 0, NULL, 0, p))
        die("instantiate TEST-RAND");

    d.drbg = EVP_RAND_CTX_new(mech, d.parent);
    if (d.drbg == NULL)
        die("new HASH-DRBG / HMAC-DRBG");
    q = p;
    if (hmac)
        *q++ = OSSL_PARAM_construct_utf8_string(OSSL_DRBG_PARAM_MAC, "HMAC", 0);
    *q++ = OSSL_PARAM_construct_utf8_string(OSSL_DRBG_PARAM_DIGEST, (char *)h->openssl, 0);
    *q++ = OSSL_PARAM_construct_uint(OSSL_DRBG_PARAM_RESEED_REQUESTS, &reseed_requests);
    *q++ = OSSL_PARAM_construct_uint64(OSSL_DRBG_PARAM_RESEED_TIME_INTERVAL, &reseed_time);
    *q = OSSL_PARAM_construct_end();
    if (!EVP_RAND_CTX_set_params(d.drbg, p))
        die("set HASH-DRBG / HMAC-DRBG params");
    if (EVP_RAND_get_strength(d.drbg) != h->strength)
        die("self-check: OpenSSL's security strength is not SP 800-90A's");
    EVP_RAND_free(test);
    EVP_RAND_free(mech);
    /* Never NULL: with NULL OpenSSL substitutes its own default personalization. */
    if (!EVP_RAND_instantiate(d.drbg, h->strength, 0, pers->b, pers->n, NULL)) {
        EVP_RAND_CTX_free(d.drbg);
        d.drbg = NULL;
    }
    return d;
}

static void drbg_free(drbg *d)
{
    EVP_RAND_CTX_free(d->drbg);
    EVP_RAND_CTX_free(d->parent);
}

static void drbg_generate(drbg *d, unsigned char *out, size_t n, const bytes *adin)
{
    if (!EVP_RAND_generate(d->drbg, out, n, 0, 0, adin->n ? adin->b : NULL, adin->n))
        die("generate");
}

/* reseed(entropy, additional): the new entropy comes from the parent, as in evp_test. */
static void drbg_reseed(drbg *d, const bytes *entropy, const bytes *adin)
{
    set_test_entropy(d->parent, entropy);
    if (!EVP_RAND_reseed(d->drbg, 0, NULL, 0, adin->n ? adin->b : NULL, adin->n))
        die("reseed");
}

/* ---------- self-checks ---------- */

typedef struct {
    const char *name;
    size_t hash; /* index into HASHES */
    int reseed;
    const char *entropy, *nonce, *pers, *entropy_reseed, *adin_reseed, *adin1, *adin2, *returned;
} cavp_record;

/*
 * One record per hash and mechanism, copied from tests/data/{hash,hmac}_drbg_*.rsp (CAVS 14.3):
 * the file, the line of its COUNT, the group and the COUNT are in each name. pr_false records
 * reseed before the two Generates; no_reseed records do not. The second Generate's output is
 * compared, as the CAVP procedure (and tests/kat.rs) does.
 */
static const cavp_record CAVP_HASH[] = {
    { "hash_drbg_pr_false.rsp line 520: [SHA-1] PersonalizationStringLen = 128, "
        "AdditionalInputLen = 128, COUNT = 3",
        0, 1,
        "eff39bac144eacb67651808aa4d70f0a",
        "1843b75b19094983",
        "d06aade2fdd295a742d9ede544ada966",
        "04144df3cd4bf9d87585b53f968a5b03",
        "4b524b39c7427eb67dff81b91aff6470",
        "f510fac434d5ce28463705783bcc599e",
        "7463af9fff985c0dd756b9b4858d78ce",
        "6e226d24c9899880ab4808e24b9edc84dd57dc3ca05edf68eeac2fa079380f87"
            "5f8ce450c7a4e973747dd4e96244b18b819710f0b0ecfda2c490e075e1976e61"
            "19eecaf3ef1ca581d6fabd100ee3e0d6" },
    { "hash_drbg_no_reseed.rsp line 2480: [SHA-224] PersonalizationStringLen = 192, "
        "AdditionalInputLen = 192, COUNT = 4",
        1, 0,
        "63f006ddd4457b36ad98266c409843bc887909e91a08cbe4",
        "78befcbb0f4b40c7f8e05e26",
        "9421617640fcbc98a0c3af2ccecc47f17a7a25d215404c0c",
        "",
        "",
        "6690de079871e452b0faf6d4bc2b60ca0e94402a15d81407",
        "910976d3fb6a72a9ba8e762ababca95f7e2dedc4722f1b2e",
        "0c127ca482e866e0002de04b89dfa4da737758e2f86e59d8e38562515b366b81"
            "50c4c9aa760f7a990f498283a8376ea9864e1c12700748f3aa7db8a58ffc2968"
            "e4e3b6db7a30a0cfc400ea1fec45bb3ed47e63aa757b16bb3d83c51094847ecf"
            "9986b600f8f8e6c8f2d71c09bd8c0c5a" },
    { "hash_drbg_pr_false.rsp line 5596: [SHA-256] PersonalizationStringLen = 256, "
        "AdditionalInputLen = 256, COUNT = 5",
        2, 1,
        "83d923f6717b9186953e1d1e861869cbef45b4674ad1295aea0add24031d0282",
        "3ec3ac2a6cb867a0cd37314fb06edb51",
        "ef5a050a4be7a6800e6c583373ed439667f60d13ad0cb05eedc30152e61999cf",
        "961f97bc5a716b5442e74bb66c39324881b25ce2bdd1be2fd8b8c2ff4bf5a959",
        "37d559ec48e0c9e686ae799f9de0725f205a2801d2bcc8837f38924968eba917",
        "01c6e83ee8b11096cac754a8ad3bf944dc447c2e9b93292fd192bd8bc7afd362",
        "909d590361c8db2f29f7993eb9743ff3b0c66950ffef34301eac8a105e89dcf0",
        "6855e7d670d50d40f1f789f2cee1fdb6879b4401788b54c6ac11e776ad5a0772"
            "5c3bea17f19b2241322fc2dc23327e5229d3e25cce3c2c52abcdc5f2739596bf"
            "e609980c559b239a3c8f0f86770078ff45b3c7cc9264bc1a64e4e668c932ec3a"
            "473f8d5ce86a19c0a99009fd4695d392ab5c0c5752621342bbbff00c6e4eb473" },
    { "hash_drbg_no_reseed.rsp line 6592: [SHA-384] PersonalizationStringLen = 256, "
        "AdditionalInputLen = 256, COUNT = 6",
        3, 0,
        "5082ac80cd3af3ccaaed9d107162fe84454519d4bce78cf34af410ebfee2ef3f",
        "36b63e1c771cd2e5af376eb2161fd374",
        "2f094d73456b3831f8b87a4da447996131fc8e1dfc57177badbd2dd6ccfbb3a7",
        "",
        "",
        "a243f0204f0a8856967d59fb345598b63bf04eaddb1d11ef37d1241562f6933d",
        "3080f43610f9d3543cd7326b23b5a156406eada28ba975e534d39f89b9d70478",
        "2fd543b2dbd38cec3507c18f07515d07d67be9c0b52fe5b5710ff3d7e7be8fb7"
            "9386c93cc0030847e813ab7ee8c7c3d95228bf903f6fbfd8efd428bb84b2d1f4"
            "ee038ec208c2474a63b3ab9f26afd11d5b10cfe8e6ee1abd43329aae940668c6"
            "80953842b4943a69e4271ebc991575058178cc137c3035d1211d815859781b50"
            "65b8687c4ff0430c40dacedf7777d4433a6bebd3ddb6ee3967511186fa108fda"
            "d428d98274388babfea5c44d241c7a2acb9aadc5cafbbcc9a302d76bd86d6c14" },
    { "hash_drbg_pr_false.rsp line 10672: [SHA-512] PersonalizationStringLen = 256, "
        "AdditionalInputLen = 256, COUNT = 7",
        4, 1,
        "c080557db018d5fb4589975cb2dedde19a070393cc291fef224e1599b07e1ca4",
        "e3a2362c0b9a05b457a48b1983ad2e1a",
        "0780805cd1acb58ce199c76fd66bfa5496ec257a0cc7555589b8a0731a1e21a7",
        "cc89879f5b345e865ff415e9c5b29455230b4652544a0df58ddbc3dc46e348b4",
        "c8fedd87aa61716694334fd513b7ad9291666e95841f4d62ff491d5ac2b030df",
        "34a3b0d935886b7e9275f202ccc5590d20cfde2d0e6309c41630273414a6b3ec",
        "874306fb7787c7a8ea12eada0c6559cf2971209d4dbcf6cba42f95404b54e3e1",
        "30682a9f8570ca91c25896f5f8904407774abac708571e3bf4cc7b5c1a43285e"
            "f795ea099095eba79892ba3fffe3f2b7dc7600abad7e16774a9f2c0c730fc96f"
            "4c8180da13031d9c2ff8faf2b95ab82c5f515fc5bdcb84538d164e7225ac6b17"
            "7e5edb4e8c956baa0e5bf54e76292d7e98fe2e34cc78de83f3f5ba71fea7b313"
            "b3f812ede6c888d464b896a714264425cea8944422206bbfc3f488f53095fe41"
            "976c1a69965cb8552ab38f8cfbad9c3d778436e0010f9a150f56470387fed34b"
            "de5f6adc78699d7922438b79d16d5b319499444cc0f7ad579e8e07998acdaaed"
            "043958d4da0e6a9949cdc5a7af0035b14510a091f8583bebee9700fd4312cd2f" },
    { "hash_drbg_no_reseed.rsp line 10704: [SHA-512/224] PersonalizationStringLen = 192, "
        "AdditionalInputLen = 192, COUNT = 8",
        5, 0,
        "c5ffeee448e760f02ab0ed79f142695ca1ad9c52bfe9434a",
        "0057a62335383d523d0c901e",
        "edef123de50121b701673f8f41cb62aab17f0f9bb1248f10",
        "",
        "",
        "71b6ad9e6203c9e4cd68850c86d86fb00a53f149f8cc1ab9",
        "bd7419b89d6e5455efde4599efd622d9bef12e69f87f38a7",
        "5a04175330c7e7d1d610c7f10e08c7e031ab513f5d707a601d0cd580d144f99d"
            "fbea8ff634d574b4dc057d1a0926a5ee4178a2d8be59900072664a6d3d6a1b05"
            "7236fc7220a5c1b980d49f35d9a9b49dae12f8e8cbad22983b9bbf82f89e5f07"
            "e369d001b25477fa22926b8834a6f286" },
    { "hash_drbg_pr_false.rsp line 15748: [SHA-512/256] PersonalizationStringLen = 256, "
        "AdditionalInputLen = 256, COUNT = 9",
        6, 1,
        "d1b191bb689770945030a354b2b34d10b1efd017751ed0e536492c36a1922fba",
        "312bd4e68027a51d35e1880172d4545e",
        "84425f04f3390d31ce4343ad6457919f0e26858f85711d85937c619fc64a0222",
        "6fcbc901b5eb8e5ca64ad7dfdbe2f89b67d527788ddea88757db4c17e20e6d97",
        "ac9cbe5a1a22ea085ca7dc272ba7281c78e1e69f7a50f77735e7161b0db913a6",
        "36678c4c6d9604d39db459754cc0c30cf6bbd8efa24ef5903d06cfc24aaf9984",
        "71acd0dbdfb8f115715b863f3e6d567c738c0a58f0361cf8bea5aadf6f0de9a4",
        "45d6f916c4f37bc3dde943c3cd4429b2a5222277738e95144cf76769fd80b806"
            "d2271086a114fcdf1a557fc7ca9e8b50e7dc96ab3f079aff0c558c630b54d057"
            "16540279c4b081fdf94e0cc2a36a995151b1a596de185d61373dc4ac1412e3bc"
            "737ed7f473fb9b43fc429467ddd97f389824342b25c764e58db51572d930656b" },
};

static const cavp_record CAVP_HMAC[] = {
    { "hmac_drbg_no_reseed.rsp line 424: [SHA-1] PersonalizationStringLen = 128, "
        "AdditionalInputLen = 128, COUNT = 3",
        0, 0,
        "b479a14d125fe4601053989439f85200",
        "e198df756aff7543",
        "8f590670f88d8c2c713d63643f93ba55",
        "",
        "",
        "cda7c7ee77e667b96ef0ba330c9ca6ac",
        "a60fd147f6cdfb408d160e388c20d8d8",
        "5f088bcebd816551c4b22c3024aeab2f75c906dc8fd0ab0c80055e0445c1dc15"
            "1a06df81bd39b8535261a7a5dcedc7f9b17c062ee6f120f2099f2ab5aa93f27a"
            "08d7b5cf1027e26adf54a520916c2cb4" },
    { "hmac_drbg_pr_false.rsp line 3058: [SHA-224] PersonalizationStringLen = 192, "
        "AdditionalInputLen = 192, COUNT = 4",
        1, 1,
        "9a4232a59cc579867f8330c288a9218251030c00ebe50c9c",
        "d97d6cff6e49ad079df50964",
        "b4498a32f664d4b489c2b47e67845d2d2bed5096e88f86de",
        "4ec2ebe3ad4e515654af383da265d7b348dd4b89ddd49cbd",
        "b8471ee87531817d81ee32578d27fa3a190df33561da7a2d",
        "2e74194aa62ef911599b37a51fa742817e3a4e6c254ec179",
        "afc7f13ae55e738cceb976ebdd01698de4d103db797f799b",
        "340c28cb7cf4c3e143dac3e133de864b1f458c76e3d47f3cbb6845f940be174b"
            "8819fc539f42005f4485fddc657f064c34873094e25a9bf7ec341a98cb97014a"
            "1d694b1694170ca5a8976e86f6e4e41232f526ec8536facd02394f492fbcc7c2"
            "98ef0eddb3c5a148399ded7677366cf3" },
    { "hmac_drbg_no_reseed.rsp line 4536: [SHA-256] PersonalizationStringLen = 256, "
        "AdditionalInputLen = 256, COUNT = 5",
        2, 0,
        "362ece9d330e1172a8f9e50258476d0c79c3ee50346524ba12d970ee3a6ef8c5",
        "cf11bcb4d9d51311ceacfca8705e833f",
        "abb5a8edde02e526449284ecc31bc713383df3ed085f752e3b6a32f305861eed",
        "",
        "",
        "746302ab1f4a86b17546bea762e929360f2e95c7788a63545a264ef997c8c65e",
        "b907c5b2a8833a48e56e819228ce9a050b41b3309f5ca37bed720311d92b33af",
        "73c7131a558350590053580873ef956ff952f2aa6ff1bea452e013d1bc2afdde"
            "a2311756dbe756e63ba6258480c48f3f6c1319b5f572f67ca530af09e39413d1"
            "d432bea8f89206619618cb0e7c88e9f2033639d0eb0efc20616b64f940da99b8"
            "8231984c3fb23f19e890576f555fde394dbd4351f17a7ffd5c369379001bda03" },
    { "hmac_drbg_pr_false.rsp line 8134: [SHA-384] PersonalizationStringLen = 256, "
        "AdditionalInputLen = 256, COUNT = 6",
        3, 1,
        "2cc330b34c976c859936c21e2ad88bb60ff153e41131567f58ad34bff5c9cb41",
        "8939fed56356af7fe215986a5d0ed8e9",
        "bf531083f35066ebfaeabd67b82d392ef6b121e7d9603a5407c5bc74cd596023",
        "a078dcb1d3fcee6b99714eea3bfcefb37a344a69d414965539ddce9df239be2f",
        "51f223dc461ac2df1c4877f65ca876d635d50939fa9dd586c176d8ab73c6d605",
        "ff9d6807d71ded1305d9e2cdc811dac2d73746b001b53ec8a5509c4ce0a07efa",
        "f5222c8966659974dd8a7244d2cee588b6c9a2700f338683fff9ccc45b6d3807",
        "981abda0e405c976435ec7f938570d911e5bbb32add52a8b94e528486e9dafae"
            "139eb15cc2b56fedfb9e4b2d10dbcaa5e6ab985be16c62b9b75a037684986843"
            "a7a0e3baabc34859253df2a053dcb0352a0554fd2d4530de0251b1b852d1d3b6"
            "e08548e215902ec8dc46ee89f3fc262c7a35aef8216b3def65bd56f0482a18a3"
            "29f96863afd951307740fd8653d333f932940e2a87523afbc162c5c1d2bbe16f"
            "33a4b0ee0ec75bcfa6aee6d8348265938738be638f78506ab731d3e9ab345551" },
    { "hmac_drbg_no_reseed.rsp line 8648: [SHA-512] PersonalizationStringLen = 256, "
        "AdditionalInputLen = 256, COUNT = 7",
        4, 0,
        "f1f6e5a55fb2180de436d48115aa1aa38a6242eeb0959de3690f259c1d8395a5",
        "862d1ac4843404d25215c83bca90f44e",
        "f467ef083c745a1bfc9be44f1d468b2518e3ff1c0cee6819fdde354d4071b17e",
        "",
        "",
        "fdda9f0888c4439cded15a768300d163c1e326ee5571c22ab95ab3e44b1676d2",
        "6b8d60c565604c8fa8d7adaf0b07ed268a491fb79794d2770356e191daa1cb50",
        "55d0788614b770f4b8c3d3ac0bbf628f294ba2fd16612b65d0f469ded665e3c8"
            "b82c95db80cc6b410b5a6e624151fc50bf02f279ffabc19dd094cffb17ba44b1"
            "1209b923df326db14eee35a8bf1eca3807afae918206e844e517eb32c2073420"
            "08a0da742e734433867fd86fd89d27ec6e51a9db3ad1adea645fdc57179c4b71"
            "de8b455ae00efc09328a0bffd8c61e3880c007915997daeed4adba61b44040f6"
            "f9b6c6427e1c23357c8f7e18b5c974b3c34a2fd5cb5e70f48df2d10c1deabd98"
            "7f8390bb33858d9a5133a7bd798b1c7741729b8562fecb3d4831e9ce101de192"
            "d64bb5d757cbb21090d669afc5566c1d6e25586678b5f2fc7d6c6113ac4eb54f" },
    { "hmac_drbg_pr_false.rsp line 13210: [SHA-512/224] PersonalizationStringLen = 192, "
        "AdditionalInputLen = 192, COUNT = 8",
        5, 1,
        "39ccad173be1b054fa77c5c372b55be3d1302511cccb4597",
        "27d64e8c1faecf6c99f907df",
        "fcbd05b3902a40dcc72f3d04e2dc0ecfd691ee87f7ec5fbd",
        "56604742f2b193d5f8040f9914b7f9277dc4238b1690a48d",
        "81f18c0fa49281db6728780a69106b2ebe41de8f3c526248",
        "9867ad2e0139c3706d6e11e8cb5e67c418433ddcd24e61e8",
        "767ff3099348c7efcff4957473bc0a2e6caff2fbc5031a91",
        "43f5e497dea0acd6e2e2aab59034a6f71da82abd9461686e96a551d32f480a90"
            "8a8dfe312c7af564b152d77b05596407d177ef5cf2751a707ec80b82e25ff44c"
            "73cdbeda7729b234c4e728d0b0152783a1a770841d5096814adca27b8e4d1c2e"
            "f0bcb4370c28f913742362a2ee403dd2" },
    { "hmac_drbg_no_reseed.rsp line 12760: [SHA-512/256] PersonalizationStringLen = 256, "
        "AdditionalInputLen = 256, COUNT = 9",
        6, 0,
        "ee28b9e92d4da3c2e1d3f7466b454153d803bf584561051b2f09a0230f353a34",
        "2507e58a3f71d86585c2a678252a408a",
        "57bfbad36e612da95d30a6c2b47252b1559628316b57d7b56781bf07ce47115e",
        "",
        "",
        "bc061d8c3aa86d7a057b4e1e226fb5e21729e25a38188d901894a28879df8d87",
        "838a571944a02fa04a8de7caab95551badc0385341416595547a42a543b56dd4",
        "8886f1b2573e0375ec179c34e34605ebebf65cdfd7df53d3f6416cc79c6f23e3"
            "01eadf38ba86d04ac79b4b4aacc40e969c19327de64dbafdb647168f46315c1b"
            "d93c2336d83b5de4177cb5af7a13e20d11f303de0d3d4d465e8d6c6103ec82fb"
            "def4f91bd9dfca64357a8fcf7ebe0a0438f1e54f42c7dcf3724ae18ce439dcc1" },
};


static void check_cavp(int hmac, const cavp_record *records, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        const cavp_record *r = &records[i];
        bytes e = from_hex(r->entropy), n = from_hex(r->nonce), p = from_hex(r->pers);
        bytes a1 = from_hex(r->adin1), a2 = from_hex(r->adin2), want = from_hex(r->returned);
        unsigned char out[sizeof(want.b)];
        drbg d = drbg_new(hmac, &HASHES[r->hash], &e, &n, &p);
        if (d.drbg == NULL)
            die("CAVP self-check: instantiate failed");
        if (r->reseed) {
            bytes er = from_hex(r->entropy_reseed), ar = from_hex(r->adin_reseed);
            drbg_reseed(&d, &er, &ar);
        }
        drbg_generate(&d, out, want.n, &a1);
        drbg_generate(&d, out, want.n, &a2);
        if (memcmp(out, want.b, want.n) != 0) {
            fprintf(stderr, "sha_drbg_vectors: CAVP self-check failed: %s %s\n", MECHANISMS[hmac],
                r->name);
            exit(1);
        }
        drbg_free(&d);
    }
}

/*
 * max_request is 2^16 bytes; a request above it is a 2^16-byte request and the rest, each with
 * the same additional input (EVP_RAND_generate splits it so); a 0-byte request is no Generate
 * at all (the state is as before it, where drbgd's generate runs one Generate and its update, so
 * no record asks for 0 bytes).
 */
static void check_requests(int hmac, const hash_def *h)
{
    static unsigned char whole[MAX_OUT], parts[MAX_OUT];
    unsigned char x64[64], y64[64];
    char label[128];
    bytes e, n, a;
    size_t max_request = 0;
    OSSL_PARAM q[2] = { OSSL_PARAM_construct_size_t(OSSL_RAND_PARAM_MAX_REQUEST, &max_request),
        OSSL_PARAM_construct_end() };
    drbg x, y;

    snprintf(label, sizeof(label), "drbgd sha_drbg_openssl %s %s requests", MECHANISMS[hmac],
        h->name);
    e = derive(label, h->strength / 8);
    n = derive(label, h->strength / 16);
    a = derive(label, 17);
    x = drbg_new(hmac, h, &e, &n, &NONE);
    y = drbg_new(hmac, h, &e, &n, &NONE);
    if (x.drbg == NULL || y.drbg == NULL)
        die("request self-check: instantiate");
    if (!EVP_RAND_CTX_get_params(x.drbg, q) || max_request != MAX_REQUEST)
        die("self-check: max_request is not 65536");
    drbg_generate(&x, whole, MAX_OUT, &a);
    drbg_generate(&y, parts, MAX_REQUEST, &a);
    drbg_generate(&y, parts + MAX_REQUEST, MAX_OUT - MAX_REQUEST, &a);
    if (memcmp(whole, parts, MAX_OUT) != 0)
        die("self-check: a request above max_request is not two requests");
    drbg_generate(&x, x64, 0, &a);
    drbg_generate(&x, x64, sizeof(x64), &NONE);
    drbg_generate(&y, y64, sizeof(y64), &NONE);
    if (memcmp(x64, y64, sizeof(x64)) != 0)
        die("self-check: a 0-byte request changed the state");
    drbg_free(&x);
    drbg_free(&y);
}

/* ---------- the records ---------- */

/* One call after instantiate: 'G' generate(len, adin), 'R' reseed(entropy, adin). */
typedef struct {
    char op;
    size_t len;
    bytes entropy, adin;
} step;

typedef struct {
    bytes entropy, nonce, pers;
    size_t nsteps;
    step steps[MAX_STEPS];
} plan;

/* The inputs of a plan by number (entropy, nonce, personalization, then each step's entropy
 * and additional input), or NULL past the last. */
static bytes *input(plan *p, size_t i)
{
    if (i < 3)
        return i == 0 ? &p->entropy : i == 1 ? &p->nonce : &p->pers;
    i -= 3;
    if (i / 2 >= p->nsteps)
        return NULL;
    return i % 2 == 0 ? &p->steps[i / 2].entropy : &p->steps[i / 2].adin;
}

static const char *const INPUT_NAMES[] = { "entropy input", "nonce", "personalization" };

/* Runs one record on a fresh DRBG, printing its lines if print; digest is the SHA-256 of all
 * its outputs in order. */
static void run_plan(int hmac, const hash_def *h, const plan *pl, int print, unsigned char *digest)
{
    static unsigned char out[MAX_OUT];
    unsigned int mdlen;
    EVP_MD_CTX *all = EVP_MD_CTX_new();
    drbg d = drbg_new(hmac, h, &pl->entropy, &pl->nonce, &pl->pers);
    if (d.drbg == NULL)
        die("instantiate");
    if (all == NULL || !EVP_DigestInit_ex(all, EVP_sha256(), NULL))
        die("sha256");
    if (print) {
        fputs("Instantiate = ", stdout);
        print_hex(pl->entropy.b, pl->entropy.n);
        putchar(' ');
        print_hex(pl->nonce.b, pl->nonce.n);
        putchar(' ');
        print_hex(pl->pers.b, pl->pers.n);
        putchar('\n');
    }
    for (size_t k = 0; k < pl->nsteps; k++) {
        const step *s = &pl->steps[k];
        if (s->op == 'R') {
            drbg_reseed(&d, &s->entropy, &s->adin);
            if (print) {
                fputs("Reseed = ", stdout);
                print_hex(s->entropy.b, s->entropy.n);
                putchar(' ');
                print_hex(s->adin.b, s->adin.n);
                putchar('\n');
            }
            continue;
        }
        if (s->len == 0 || s->len > MAX_OUT)
            die("bad request length");
        drbg_generate(&d, out, s->len, &s->adin);
        if (!EVP_DigestUpdate(all, out, s->len))
            die("sha256");
        if (print) {
            printf("Generate = %zu ", s->len);
            print_hex(s->adin.b, s->adin.n);
            putchar(' ');
            if (s->len <= MAX_HEX_OUTPUT) {
                print_hex(out, s->len);
            } else {
                unsigned char md[EVP_MAX_MD_SIZE];
                if (!EVP_Digest(out, s->len, md, &mdlen, EVP_sha256(), NULL))
                    die("sha256");
                fputs("sha256:", stdout);
                print_hex(md, mdlen);
            }
            putchar('\n');
        }
    }
    if (!EVP_DigestFinal_ex(all, digest, &mdlen))
        die("sha256");
    EVP_MD_CTX_free(all);
    drbg_free(&d);
}

/* Changing the last byte of any input changes the record's outputs: OpenSSL used all of it. */
static void check_inputs_used(int hmac, const hash_def *h, const plan *pl, int count)
{
    static plan changed;
    unsigned char want[EVP_MAX_MD_SIZE], got[EVP_MAX_MD_SIZE];
    run_plan(hmac, h, pl, 0, want);
    for (size_t i = 0;; i++) {
        bytes *b;
        changed = *pl;
        b = input(&changed, i);
        if (b == NULL)
            break;
        if (b->n == 0)
            continue;
        b->b[b->n - 1] ^= 0x01;
        run_plan(hmac, h, &changed, 0, got);
        if (memcmp(want, got, 32) == 0) {
            fprintf(stderr,
                "sha_drbg_vectors: self-check failed: COUNT = %d: input %zu (%s) is not used to "
                "its last byte\n",
                count, i,
                i < 3               ? INPUT_NAMES[i]
                    : (i - 3) % 2 == 0 ? "a reseed's entropy input"
                                       : "an additional input");
            exit(1);
        }
    }
}

/* Lengths, chosen by SHA-256 of labels naming the record and the input. */

static size_t entropy_len(const hash_def *h, const char *label, const char *what)
{
    size_t min = h->strength / 8; /* OpenSSL refuses less */
    switch (pick(4, "%s %s length class", label, what)) {
    case 0:
        return min;
    case 1:
        return min + pick(17, "%s %s length", label, what);
    default:
        return min + pick(129 - min, "%s %s length", label, what);
    }
}

static size_t nonce_len(const hash_def *h, const char *label)
{
    switch (pick(4, "%s nonce length class", label)) {
    case 0:
        return h->strength / 16; /* half the security strength, as drbgd draws it */
    case 1:
        return 1 + pick(8, "%s nonce length", label);
    default:
        return 1 + pick(64, "%s nonce length", label); /* OpenSSL refuses an empty nonce */
    }
}

/* Personalization or additional input: empty a third of the time. */
static size_t optional_len(const hash_def *h, const char *label, const char *what)
{
    switch (pick(3, "%s %s length class", label, what)) {
    case 0:
        return 0;
    case 1:
        return 1 + pick(2 * h->outlen, "%s %s length", label, what);
    default:
        return 1 + pick(200, "%s %s length", label, what);
    }
}

/* A Generate length from 1 to MAX_OUT: short ones (within three hash outputs, or at a multiple
 * of the output length and either side of it) most often, then up to 4 KiB, then up to 64 KiB +
 * 100. */
static size_t generate_len(const hash_def *h, const char *label, size_t k)
{
    size_t c = pick(10, "%s call %zu length class", label, k);
    size_t r = pick(1u << 30, "%s call %zu length", label, k);
    if (c < 3)
        return 1 + r % (3 * h->outlen);
    if (c < 5)
        return (1 + r % 64) * h->outlen + (r >> 8) % 3 - 1;
    if (c < 8)
        return 1 + r % 4096;
    return 4097 + r % (MAX_OUT - 4096);
}

static bytes make_input(const char *label, const char *what, size_t n)
{
    char full[200];
    snprintf(full, sizeof(full), "%s %s", label, what);
    return derive(full, n);
}

/* Record c of a mechanism and hash. The first three are fixed shapes; the rest are drawn. */
static void make_plan(int hmac, const hash_def *h, int c, plan *p)
{
    char label[128], what[64];
    size_t o = h->outlen, reseed_at = MAX_STEPS;
    snprintf(label, sizeof(label), "drbgd sha_drbg_openssl %s %s record %d", MECHANISMS[hmac],
        h->name, c);
    memset(p, 0, sizeof(*p));
    switch (c) {
    case 0: /* the service's shape: entropy of the strength, half of it as nonce, nothing else;
             * one byte, then one hash output */
        p->entropy = make_input(label, "entropy", h->strength / 8);
        p->nonce = make_input(label, "nonce", h->strength / 16);
        p->nsteps = 2;
        p->steps[0] = (step) { 'G', 1, NONE, NONE };
        p->steps[1] = (step) { 'G', o, NONE, NONE };
        return;
    case 1: /* exactly max_request, then either side of one hash output */
        p->entropy = make_input(label, "entropy", h->strength / 8);
        p->nonce = make_input(label, "nonce", h->strength / 16);
        p->pers = make_input(label, "personalization", 48);
        p->nsteps = 3;
        p->steps[0] = (step) { 'G', MAX_REQUEST, NONE, make_input(label, "additional 0", o) };
        p->steps[1] = (step) { 'G', o + 1, NONE, NONE };
        p->steps[2] = (step) { 'G', o - 1, NONE, make_input(label, "additional 2", 1) };
        return;
    case 2: /* above max_request (two Generates), a reseed, one byte above max_request */
        p->entropy = make_input(label, "entropy", entropy_len(h, label, "entropy"));
        p->nonce = make_input(label, "nonce", nonce_len(h, label));
        p->pers = make_input(label, "personalization", optional_len(h, label, "personalization"));
        p->nsteps = 4;
        p->steps[0] = (step) { 'G', MAX_OUT, NONE, make_input(label, "additional 0", 2 * o) };
        p->steps[1] = (step) { 'R', 0, make_input(label, "reseed entropy 1", h->strength / 8),
            NONE };
        p->steps[2] = (step) { 'G', MAX_REQUEST + 1, NONE, NONE };
        p->steps[3] = (step) { 'G', 2 * o, NONE, make_input(label, "additional 3", 100) };
        return;
    }
    p->entropy = make_input(label, "entropy", entropy_len(h, label, "entropy"));
    p->nonce = make_input(label, "nonce", nonce_len(h, label));
    p->pers = make_input(label, "personalization", optional_len(h, label, "personalization"));
    p->nsteps = 1 + pick(4, "%s calls", label);
    if (c % 3 == 2) { /* a reseed, never last: a Generate shows its effect */
        p->nsteps++;
        reseed_at = pick(p->nsteps - 1, "%s reseed", label);
    }
    for (size_t k = 0; k < p->nsteps; k++) {
        step *s = &p->steps[k];
        snprintf(what, sizeof(what), "additional %zu", k);
        s->adin = make_input(label, what, optional_len(h, label, what));
        if (k == reseed_at) {
            s->op = 'R';
            snprintf(what, sizeof(what), "reseed entropy %zu", k);
            s->entropy = make_input(label, what, entropy_len(h, label, what));
        } else {
            s->op = 'G';
            s->len = generate_len(h, label, k);
        }
    }
}

static void emit_section(int hmac, const hash_def *h, int *count)
{
    static plan p;
    unsigned char digest[EVP_MAX_MD_SIZE];
    printf("\n[%s %s]\n", MECHANISMS[hmac], h->name);
    for (int c = 0; c < RECORDS; c++) {
        make_plan(hmac, h, c, &p);
        check_inputs_used(hmac, h, &p, *count);
        printf("\nCOUNT = %d\n", (*count)++);
        run_plan(hmac, h, &p, 1, digest);
    }
}

int main(void)
{
    int count = 0;

    check_cavp(0, CAVP_HASH, sizeof(CAVP_HASH) / sizeof(CAVP_HASH[0]));
    check_cavp(1, CAVP_HMAC, sizeof(CAVP_HMAC) / sizeof(CAVP_HMAC[0]));
    for (int hmac = 0; hmac < 2; hmac++)
        for (size_t i = 0; i < NHASHES; i++)
            check_requests(hmac, &HASHES[i]);
    printf("# Known answers for Hash_DRBG and HMAC_DRBG (SP 800-90A 10.1.1, 10.1.2) from an\n"
           "# independent implementation, %s:\n"
           "# EVP_RAND \"HASH-DRBG\" (digest) and \"HMAC-DRBG\" (mac HMAC, digest) over SHA-1,\n"
           "# SHA-224, SHA-256, SHA-384, SHA-512, SHA-512/224 and SHA-512/256, on a \"TEST-RAND\"\n"
           "# parent holding the fixed entropy input and nonce, as in OpenSSL's own\n"
           "# test/drbgtest.c and evp_test. Produced by scripts/sha_drbg_vectors.sh\n"
           "# (scripts/sha_drbg_vectors.c); regenerate with that script, do not edit.\n"
           "# Automatic reseeding is off (reseed_requests = 0, reseed_time_interval = 0); prediction\n"
           "# resistance is off; the personalization is never NULL (empty means empty).\n"
           "# Inputs are SHA-256 expansions of fixed labels, and their lengths are drawn the same\n"
           "# way: entropy from the security strength / 8 bytes (OpenSSL's minimum; 16, 24 or 32)\n"
           "# to 128 bytes, nonces from 1 to 64 bytes (OpenSSL refuses an empty one),\n"
           "# personalization and additional input empty in about a third of the calls and up to\n"
           "# 200 bytes, Generates from 1 byte to 65,636 bytes; a third of the records reseed.\n"
           "# Before writing, the harness reproduced fourteen NIST CAVP records (each mechanism\n"
           "# with each hash, with personalization and additional input, half with a reseed),\n"
           "# checked in every record that changing the last byte of any input (entropy, nonce,\n"
           "# personalization, reseed entropy, additional input) changes the outputs, and for\n"
           "# each mechanism and hash that max_request is 65536 bytes, that a request above it\n"
           "# equals a 65,536-byte request and the rest with the same additional input, and that\n"
           "# a 0-byte request leaves the state unchanged.\n"
           "#\n"
           "# Format. A section [HASH-DRBG <hash>] or [HMAC-DRBG <hash>] names the mechanism and\n"
           "# its hash as NIST writes it (SHA-512/224). Each record (COUNT = n) is one fresh DRBG\n"
           "# and its calls, in order; fields are lowercase hex, '-' is the empty string:\n"
           "#   Instantiate = <entropy> <nonce> <personalization>\n"
           "#   Generate = <bytes requested, decimal> <additional input> <output>\n"
           "#   Reseed = <entropy> <additional input>\n"
           "# An output longer than %d bytes is given as sha256:<SHA-256 of the output>.\n"
           "# Generate is one EVP_RAND_generate call (prediction_resistance = 0). OpenSSL's\n"
           "# max_request for these mechanisms is 65536 bytes (2^19 bits, SP 800-90A 10.1 table 2):\n"
           "# EVP_RAND_generate splits a longer request into Generates of at most 65536 bytes,\n"
           "# each with the same additional input (and each counted by the reseed counter), as\n"
           "# drbgd's generate does; a 0-byte request makes no Generate there (drbgd makes one), so\n"
           "# none is recorded. Reseed sets the parent's entropy and calls EVP_RAND_reseed with the\n"
           "# additional input and no direct entropy.\n",
        OpenSSL_version(OPENSSL_VERSION), MAX_HEX_OUTPUT);
    for (int hmac = 0; hmac < 2; hmac++)
        for (size_t i = 0; i < NHASHES; i++)
            emit_section(hmac, &HASHES[i], &count);
    if (fflush(stdout) != 0)
        die("write");
    fprintf(stderr, "sha_drbg_vectors: %d records, self-checks passed\n", count);
    return 0;
}
