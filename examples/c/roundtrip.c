/*
 * roundtrip.c: glyd from C. For each file named on the command line: one-shot compression
 * (a plain frame, then record mode), a streaming encoder and decoder through callbacks, each
 * decoded back and compared byte for byte; then a KV-cache page, and the error a truncated
 * frame gives. Prints one line per step; exits 0 only if every round trip matched.
 *
 *     cc roundtrip.c $(pkg-config --cflags --libs glyd) -o roundtrip && ./roundtrip app.log
 */
#include <glyd.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;

static void check(int ok, const char *what, const char *file) {
    if (!ok) {
        fprintf(stderr, "FAILED: %s on %s (last error: %s)\n", what, file, glyd_last_error());
        failures++;
    }
}

/* A growable buffer, written by the encoder's callback. */
typedef struct {
    uint8_t *data;
    size_t len, cap;
} Buffer;

static ptrdiff_t buffer_write(void *user, const uint8_t *buf, size_t len) {
    Buffer *b = user;
    if (b->len + len > b->cap) {
        size_t cap = (b->cap + len) * 2;
        uint8_t *grown = realloc(b->data, cap);
        if (grown == NULL) return -1;
        b->data = grown;
        b->cap = cap;
    }
    memcpy(b->data + b->len, buf, len);
    b->len += len;
    return (ptrdiff_t)len;
}

/* A cursor over bytes in memory, read by the decoder's callback a little at a time. */
typedef struct {
    const uint8_t *data;
    size_t len, pos;
} Cursor;

static ptrdiff_t cursor_read(void *user, uint8_t *buf, size_t cap) {
    Cursor *c = user;
    size_t n = c->len - c->pos;
    if (n > cap) n = cap;
    if (n > 4096) n = 4096;
    memcpy(buf, c->data + c->pos, n);
    c->pos += n;
    return (ptrdiff_t)n;
}

static uint8_t *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) return NULL;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *data = malloc(size > 0 ? (size_t)size : 1);
    *len = fread(data, 1, (size_t)size, f);
    fclose(f);
    return data;
}

/* Decodes `coded` one-shot and compares it with `want`. */
static void one_shot_back(const uint8_t *coded, size_t coded_len, const uint8_t *want, size_t want_len,
                          const char *what, const char *file) {
    uint64_t size = 0;
    int rc = glyd_decompressed_size(coded, coded_len, &size);
    check(rc == GLYD_OK && size == want_len, what, file);
    uint8_t *back = malloc(want_len + 1);
    size_t got = 0;
    rc = glyd_decompress(coded, coded_len, back, want_len + 1, &got, 0);
    check(rc == GLYD_OK && got == want_len && memcmp(back, want, want_len) == 0, what, file);
    free(back);
}

static void round_trips(const char *file) {
    size_t len = 0;
    uint8_t *data = read_file(file, &len);
    if (data == NULL) {
        fprintf(stderr, "%s: cannot read\n", file);
        failures++;
        return;
    }

    /* One-shot: a plain frame at the default level, then record mode. */
    size_t cap = glyd_compress_bound(len);
    uint8_t *coded = malloc(cap);
    size_t coded_len = 0;
    int rc = glyd_compress(data, len, coded, cap, &coded_len, 0, 0, 0);
    check(rc == GLYD_OK, "glyd_compress", file);
    one_shot_back(coded, coded_len, data, len, "plain one-shot round trip", file);
    printf("%s: %zu bytes, plain frame %zu bytes (%.2fx)\n", file, len, coded_len,
           (double)len / (double)(coded_len ? coded_len : 1));

    size_t records_len = 0;
    rc = glyd_compress(data, len, coded, cap, &records_len, 0, 0, GLYD_FLAG_RECORDS);
    check(rc == GLYD_OK, "glyd_compress (records)", file);
    one_shot_back(coded, records_len, data, len, "record mode round trip", file);
    printf("%s: record mode %zu bytes (%.2fx)\n", file, records_len,
           (double)len / (double)(records_len ? records_len : 1));

    /* The truncated frame is an error with a message, never a crash. */
    size_t got = 0;
    uint8_t *back = malloc(len + 1);
    rc = glyd_decompress(coded, records_len / 2, back, len + 1, &got, 0);
    check(rc == GLYD_ERR_CORRUPT, "truncated input is GLYD_ERR_CORRUPT", file);
    printf("%s: truncated: %s: %s\n", file, glyd_error_message(rc), glyd_last_error());

    /* Streaming: an encoder fed in odd-sized pieces, a decoder read in odd-sized pieces. */
    Buffer stream = {0};
    GlydEncoder *enc = glyd_encoder_new(buffer_write, &stream, 3, 2, 0);
    check(enc != NULL, "glyd_encoder_new", file);
    for (size_t at = 0; enc != NULL && at < len; at += 10007) {
        size_t n = len - at < 10007 ? len - at : 10007;
        check(glyd_encoder_write(enc, data + at, n) == GLYD_OK, "glyd_encoder_write", file);
    }
    if (enc != NULL) check(glyd_encoder_finish(enc) == GLYD_OK, "glyd_encoder_finish", file);
    Cursor cursor = {stream.data, stream.len, 0};
    GlydDecoder *dec = glyd_decoder_new(cursor_read, &cursor, 0);
    size_t total = 0;
    for (;;) {
        size_t n = 0;
        rc = glyd_decoder_read(dec, back + total, len + 1 - total < 3001 ? len + 1 - total : 3001, &n);
        if (rc != GLYD_OK || n == 0) break;
        total += n;
    }
    glyd_decoder_free(dec);
    check(rc == GLYD_OK && total == len && memcmp(back, data, len) == 0, "streaming round trip", file);
    printf("%s: streamed %zu bytes, decoded %zu\n", file, stream.len, total);

    /* A whole stream in record mode, through the callbacks, rebuilt the same way. */
    Cursor in = {data, len, 0};
    Buffer archive = {0};
    rc = glyd_compress_stream(cursor_read, &in, buffer_write, &archive, 0, 0, GLYD_FLAG_RECORDS);
    check(rc == GLYD_OK, "glyd_compress_stream (records)", file);
    Cursor from = {archive.data, archive.len, 0};
    Buffer rebuilt = {0};
    rc = glyd_decompress_stream(cursor_read, &from, buffer_write, &rebuilt, 0);
    check(rc == GLYD_OK && rebuilt.len == len && memcmp(rebuilt.data, data, len) == 0,
          "record mode stream round trip", file);
    printf("%s: record stream %zu bytes, rebuilt %zu\n", file, archive.len, rebuilt.len);

    free(rebuilt.data);
    free(archive.data);
    free(stream.data);
    free(back);
    free(coded);
    free(data);
}

static void kv_page(void) {
    GlydKvPageShape shape = {.tokens = 16, .heads = 4, .head_dim = 64, .dtype = 0, .layout = 0};
    size_t n = (size_t)shape.tokens * shape.heads * shape.head_dim;
    uint16_t *page = malloc(n * 2);
    uint32_t s = 12345;
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13, s ^= s >> 17, s ^= s << 5;
        page[i] = (uint16_t)(0x3c00 + (s % 512) - 256); /* bf16 values near 1.0 */
    }
    size_t bound = glyd_kv_page_bound(&shape), written = 0;
    uint8_t *coded = malloc(bound);
    int rc = glyd_kv_encode_page(&shape, (const uint8_t *)page, n * 2, coded, bound, &written);
    check(rc == GLYD_OK, "glyd_kv_encode_page", "a KV page");
    uint16_t *back = malloc(n * 2);
    rc = glyd_kv_decode_page(coded, written, (uint8_t *)back, n * 2);
    check(rc == GLYD_OK && memcmp(back, page, n * 2) == 0, "KV page round trip", "a KV page");
    printf("KV page: %zu bytes coded to %zu\n", n * 2, written);
    free(back);
    free(coded);
    free(page);
}

int main(int argc, char **argv) {
    printf("glyd %s\n", glyd_version());
    for (int i = 1; i < argc; i++) round_trips(argv[i]);
    kv_page();
    if (failures) {
        fprintf(stderr, "%d checks failed\n", failures);
        return 1;
    }
    printf("all round trips matched\n");
    return 0;
}
