#include "common/io.h"

#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include <openssl/evp.h>

int bc_write_all(int fd, const void *data, size_t len)
{
        const char *p = data;
        while (len > 0) {
                ssize_t w = write(fd, p, len);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w < 0)
                        return -errno;
                p += w;
                len -= (size_t)w;
        }
        return 0;
}

void bc_sha256_hex(const void *data, size_t len, char ret_hex[65])
{
        static const char hex[] = "0123456789abcdef";
        unsigned char md[32];
        unsigned int n = 0;
        EVP_Digest(data, len, md, &n, EVP_sha256(), NULL);
        for (unsigned i = 0; i < 32; i++) {
                ret_hex[2 * i] = hex[md[i] >> 4];
                ret_hex[2 * i + 1] = hex[md[i] & 15];
        }
        ret_hex[64] = '\0';
}
