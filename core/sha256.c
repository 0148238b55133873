/* core/sha256.c: SHA-256 through OpenSSL's libcrypto (plans record the profile's digest so a
 * plan can be matched to the exact profile it was made from). */
#include <openssl/evp.h>

#include "internal.h"

sp_status sp_sha256_hex(sp_ctx *ctx, const void *data, size_t len, char out_hex[65]) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int md_len = 0;
    if (EVP_Digest(data, len, md, &md_len, EVP_sha256(), NULL) != 1 || md_len != 32)
        return sp_fail(ctx, SP_ERR_INTERNAL, "SHA-256 digest failed in libcrypto");
    static const char hex[] = "0123456789abcdef";
    for (unsigned i = 0; i < 32; i++) {
        out_hex[2 * i] = hex[md[i] >> 4];
        out_hex[2 * i + 1] = hex[md[i] & 15];
    }
    out_hex[64] = '\0';
    return SP_OK;
}
