// glyd-gpu CUDA kernels, compiled at run time with NVRTC (see src/cuda.rs).
//
// The tiered layout (docs/FORMAT.md §8.5): tier-1 codes of w1 bits, one per value; tier-2
// codes of w2 bits, one per tier-1 escape; tier-3 exponent bytes, one per tier-2 escape; the
// verbatim sign+mantissa plane of raw_bits per value. One block of 128 threads decodes one
// tile of 4096 values (tile_exponents below); the tile index says where the tile's tier-2
// and tier-3 entries start, so tiles decode independently.

#define TILE 4096
#define THREADS 128
#define WARPS (THREADS / 32)

struct Planes {
    const unsigned char* tier1;
    const unsigned char* tier2;
    const unsigned char* tier3;
    const unsigned char* raw;
    const unsigned int* tiles;      // per tile: first tier-2 entry, first tier-3 entry
    const unsigned char* exponents; // 256 entries (padded)
    unsigned int ranks, w1, w2, n2, n3, mantissa, word_bits;
    unsigned long long n;
};

// `w` bits of value `i` of a plane (LSB-first); planes are padded with 8 zero bytes.
__device__ __forceinline__ unsigned int get_bits(const unsigned char* p, unsigned long long i, unsigned int w) {
    unsigned long long bit = i * w;
    const unsigned char* b = p + (bit >> 3);
    unsigned long long word = (unsigned long long)b[0] | ((unsigned long long)b[1] << 8) |
        ((unsigned long long)b[2] << 16) | ((unsigned long long)b[3] << 24) | ((unsigned long long)b[4] << 32);
    return (unsigned int)((word >> (bit & 7)) & ((1ull << w) - 1));
}

// Block-wide exclusive sum of `x` over the block's threads; returns this thread's start and
// sets *total. Every thread of the block must call it.
__device__ __forceinline__ unsigned int block_scan(unsigned int x, unsigned int* scratch, unsigned int* total) {
    unsigned int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    unsigned int inc = x;
    for (unsigned int d = 1; d < 32; d <<= 1) {
        unsigned int y = __shfl_up_sync(0xffffffffu, inc, d);
        if (lane >= d) inc += y;
    }
    if (lane == 31) scratch[warp] = inc;
    __syncthreads();
    unsigned int offset = 0, sum = 0;
    for (unsigned int k = 0; k < WARPS; k++) {
        if (k < warp) offset += scratch[k];
        sum += scratch[k];
    }
    __syncthreads();
    *total = sum;
    return offset + inc - x;
}

// `w` (<= 8) bits at bit `bit` of a staged plane in shared memory (LSB-first).
__device__ __forceinline__ unsigned int shared_bits(const unsigned char* s, unsigned int bit, unsigned int w) {
    const unsigned char* b = s + (bit >> 3);
    return (((unsigned int)b[0] | ((unsigned int)b[1] << 8)) >> (bit & 7)) & ((1u << w) - 1);
}

// Copies `words` 32-bit words from global into shared memory, several loads in flight.
__device__ __forceinline__ void stage_words(unsigned int* dst, const unsigned int* src, unsigned int words) {
#pragma unroll 4
    for (unsigned int i = threadIdx.x; i < words; i += THREADS) dst[i] = src[i];
}

#define MAX_W1 4
#define MAX_W2 6
#define PER_THREAD (TILE / THREADS)

// The tile's exponents live in shared memory as words of four (value v in byte v % 4 of word
// v / 4), one pad word after every 32 so that both the per-thread writes (thread t owns words
// 8t..8t+7) and the per-value reads are free of bank conflicts.
#define EXP_WORDS (TILE / 4 + TILE / 128)
__device__ __forceinline__ unsigned int exp_slot(unsigned int word) { return word + word / 32; }
__device__ __forceinline__ unsigned char* exp_byte(unsigned int* exps, unsigned int v) {
    return (unsigned char*)(exps + exp_slot(v / 4)) + v % 4;
}

// Code j (compile-time after unrolling) of the 32 W-bit codes held in c[0..W] (c[W] = 0).
template <unsigned int W>
__device__ __forceinline__ unsigned int code_at(const unsigned int* c, unsigned int j) {
    unsigned int bit = j * W, word = bit / 32, shift = bit % 32;
    unsigned int v = c[word] >> shift;
    if (shift + W > 32) v |= c[word + 1] << (32 - shift);
    return v & ((1u << W) - 1);
}

// The per-thread part of tile_exponents for tier-1 width W1: this thread's 32 tier-1 codes are
// loaded into registers once, and every loop over them unrolls to constant shifts.
template <unsigned int W1>
__device__ __forceinline__ void tile_ranks(const Planes& p, unsigned int m, unsigned int n2_tile, unsigned int t3,
                                           unsigned int t3end, const unsigned int* t1w, const unsigned char* t2s,
                                           unsigned int skip2, const unsigned char* table, unsigned int* scratch,
                                           unsigned int* exps, int* bad) {
    const unsigned int esc1 = (1u << W1) - 1, esc2 = (1u << p.w2) - 1;
    unsigned int lo = threadIdx.x * PER_THREAD;
    unsigned int valid = m > lo ? min(m - lo, (unsigned int)PER_THREAD) : 0;
    unsigned int c[W1 + 1];
#pragma unroll
    for (unsigned int i = 0; i < W1; i++) c[i] = t1w[threadIdx.x * W1 + i]; // inside t1w: 128 * 4 words
    c[W1] = 0;
    unsigned int escapes1 = 0;
#pragma unroll
    for (unsigned int j = 0; j < PER_THREAD; j++) escapes1 += (j < valid) & (code_at<W1>(c, j) == esc1);
    unsigned int total;
    unsigned int k = block_scan(escapes1, scratch, &total); // this thread's first tier-2 entry, tile-relative
    if (total != n2_tile) { if (threadIdx.x == 0) *bad = 1; }
    const unsigned int k_first = k;

    // Ranks from tiers 1 and 2; values escaped twice wait for their tier-3 slot.
    unsigned int escapes2 = 0;
#pragma unroll
    for (unsigned int g = 0; g < PER_THREAD / 4; g++) {
        unsigned int word = 0;
#pragma unroll
        for (unsigned int q = 0; q < 4; q++) {
            unsigned int j = 4 * g + q, rank = code_at<W1>(c, j), e = 0;
            if (j < valid) {
                bool twice = false;
                if (rank == esc1) {
                    // k < m <= TILE, so the read stays inside t2w even when the counts
                    // disagree (bytes past the staged words are stale but in bounds; `bad`
                    // is set then).
                    unsigned int c2 = shared_bits(t2s, skip2 + k * p.w2, p.w2);
                    k++;
                    twice = c2 == esc2;
                    escapes2 += twice;
                    rank = esc1 + c2;
                }
                if (!twice) {
                    if (rank >= p.ranks) *bad = 1;
                    e = table[rank & 255];
                }
            }
            word |= e << (8 * q);
        }
        exps[exp_slot(threadIdx.x * (PER_THREAD / 4) + g)] = word;
    }
    unsigned int i3 = t3 + block_scan(escapes2, scratch, &total);
    if (total != t3end - t3) { if (threadIdx.x == 0) *bad = 1; }
    if (escapes2 > 0) {
        k = k_first;
#pragma unroll
        for (unsigned int j = 0; j < PER_THREAD; j++) { // unrolled: c stays in registers
            if (j >= valid || code_at<W1>(c, j) != esc1) continue;
            unsigned int c2 = shared_bits(t2s, skip2 + k * p.w2, p.w2);
            k++;
            if (c2 != esc2) continue;
            if (i3 >= t3end) { *bad = 1; continue; }
            *exp_byte(exps, lo + j) = p.tier3[i3++];
        }
    }
}

// Decodes the exponents of tile `tile` into `exps` (EXP_WORDS words of shared memory, see
// exp_slot) and returns m, the tile's value count (0 past the end). Every thread of the block
// must call it.
//
// Why it is shaped this way: the tile's tier-1 and tier-2 codes are first copied into shared
// memory with coalesced word loads, so the rest runs at shared-memory latency. Each thread then
// walks 32 consecutive values: one block scan of its tier-1 escapes gives its first tier-2
// entry, a second scan of its tier-2 escapes its first tier-3 entry. Two scans per tile
// (instead of two per 128 values) keep the block off its barriers. Both scan totals must
// match the tile index, which catches a corrupt index or plane.
__device__ unsigned int tile_exponents(const Planes& p, unsigned long long tile, unsigned int* exps, int* bad) {
    __shared__ unsigned int t1w[(TILE * MAX_W1 / 8 + 8) / 4];
    __shared__ unsigned int t2w[(TILE * MAX_W2 / 8 + 16) / 4];
    __shared__ unsigned int tablew[64];
    __shared__ unsigned int scratch[WARPS];
    unsigned long long first = tile * TILE;
    if (first >= p.n) return 0; // block-uniform, like every early return below
    unsigned int m = (unsigned int)min((unsigned long long)TILE, p.n - first);
    unsigned long long tiles = (p.n + TILE - 1) / TILE;
    unsigned int t2 = p.tiles[2 * tile], t3 = p.tiles[2 * tile + 1];
    unsigned int t2end = tile + 1 < tiles ? p.tiles[2 * tile + 2] : p.n2;
    unsigned int t3end = tile + 1 < tiles ? p.tiles[2 * tile + 3] : p.n3;
    if (p.w1 < 1 || p.w1 > MAX_W1 || p.w2 < 1 || p.w2 > MAX_W2 || t2 > t2end || t2end > p.n2 ||
        t2end - t2 > m || t3 > t3end || t3end > p.n3 || t3end - t3 > t2end - t2) {
        if (threadIdx.x == 0) *bad = 1;
        return 0;
    }
    // Word loads (the planes start 8-byte aligned and are followed by 8 zero bytes, so a word
    // that runs past a plane's end stays inside the buffer). Bits past the tile's codes are
    // never used.
    unsigned long long at1 = first * p.w1 / 8; // a multiple of 512 bytes: TILE * w1 / 8
    stage_words(t1w, (const unsigned int*)(p.tier1 + at1), (m * p.w1 + 31) / 32);
    unsigned long long bit2 = (unsigned long long)t2 * p.w2;
    unsigned long long at2 = (bit2 / 8) & ~3ull; // down to a word
    unsigned int skip2 = (unsigned int)(bit2 - at2 * 8);
    unsigned int len2 = (unsigned int)(((unsigned long long)t2end * p.w2 + 7) / 8 - at2);
    stage_words(t2w, (const unsigned int*)(p.tier2 + at2), (len2 + 3) / 4);
    stage_words(tablew, (const unsigned int*)p.exponents, 64);
    __syncthreads();
    const unsigned char* t2s = (const unsigned char*)t2w;
    const unsigned char* table = (const unsigned char*)tablew;
    switch (p.w1) { // block-uniform
    case 1: tile_ranks<1>(p, m, t2end - t2, t3, t3end, t1w, t2s, skip2, table, scratch, exps, bad); break;
    case 2: tile_ranks<2>(p, m, t2end - t2, t3, t3end, t1w, t2s, skip2, table, scratch, exps, bad); break;
    case 3: tile_ranks<3>(p, m, t2end - t2, t3, t3end, t1w, t2s, skip2, table, scratch, exps, bad); break;
    default: tile_ranks<4>(p, m, t2end - t2, t3, t3end, t1w, t2s, skip2, table, scratch, exps, bad); break;
    }
    __syncthreads();
    return m;
}

// The sign+mantissa bits of value `v`.
__device__ __forceinline__ unsigned int raw_bits(const Planes& p, unsigned long long v) {
    if (p.mantissa == 7) return p.raw[v]; // bf16: one whole byte per value
    return get_bits(p.raw, v, p.mantissa + 1);
}

__device__ __forceinline__ unsigned int assemble(const Planes& p, unsigned int raw, unsigned int exponent) {
    unsigned int sign = raw >> p.mantissa;
    unsigned int mant = raw & ((1u << p.mantissa) - 1);
    return (sign << (p.word_bits - 1)) | (exponent << p.mantissa) | mant;
}

// Decodes tile `tile` of p into 16- or 32-bit words at `out` (the tensor's first word).
__device__ void decode_tile(const Planes& p, unsigned long long tile, unsigned char* out, int* bad) {
    __shared__ unsigned int exps[EXP_WORDS];
    unsigned int m = tile_exponents(p, tile, exps, bad);
    unsigned long long first = tile * TILE;
    unsigned short* out16 = (unsigned short*)out + first;
    if (p.mantissa == 7 && m % 4 == 0 && ((unsigned long long)out16 & 7) == 0 &&
        ((unsigned long long)(p.raw + first) & 3) == 0) {
        // bf16 fast path: four values per thread and step (one raw word, four exponents, one
        // 8-byte store), all loads of the unrolled steps in flight together.
        const unsigned int* raw4 = (const unsigned int*)(p.raw + first);
#pragma unroll
        for (unsigned int r = 0; r < TILE / (THREADS * 4); r++) {
            unsigned int q = r * THREADS + threadIdx.x;
            if (q < m / 4) {
                unsigned int raw = raw4[q], e = exps[exp_slot(q)];
                unsigned int w[4];
#pragma unroll
                for (unsigned int j = 0; j < 4; j++)
                    w[j] = ((raw >> (8 * j + 7)) & 1) << 15 | ((e >> (8 * j)) & 255) << 7 | ((raw >> (8 * j)) & 127);
                ((uint2*)out16)[q] = make_uint2(w[0] | w[1] << 16, w[2] | w[3] << 16);
            }
        }
        return;
    }
    for (unsigned int v = threadIdx.x; v < m; v += THREADS) {
        unsigned int w = assemble(p, raw_bits(p, first + v), *exp_byte(exps, v));
        if (p.word_bits == 16) ((unsigned short*)out)[first + v] = (unsigned short)w;
        else ((unsigned int*)out)[first + v] = w;
    }
}

// (1) Decode a tiered tensor into 16- or 32-bit words: one block per tile.
extern "C" __global__ void tiered_decode(Planes p, unsigned char* out, int* bad) {
    decode_tile(p, blockIdx.x, out, bad);
}

#define SEGMENT 256
#define MAX_BATCH 16

// (2) Fused decode + GEMV: y[b][row] += W[row][col] * x[b][col] for a tiered bf16 matrix of
// `cols` columns, batch `batch` (1..16), y zeroed by the caller. Each block decodes one
// tile's exponents into shared memory, then its warps take the tile's pieces of rows, at most
// SEGMENT columns each: lanes stride the piece, multiply by x, reduce across the warp and add
// one partial sum per row and batch vector to y.
extern "C" __global__ void tiered_gemv_bf16(Planes p, unsigned int cols, unsigned int batch, const float* x,
                                            float* y, int* bad) {
    __shared__ unsigned int exps[EXP_WORDS];
    unsigned long long tile = blockIdx.x;
    unsigned int m = tile_exponents(p, tile, exps, bad);
    if (m == 0 || cols == 0) return;
    unsigned long long first = tile * TILE, end = first + m, rows = p.n / cols;
    unsigned long long per_row = (cols + SEGMENT - 1) / SEGMENT;
    // Pieces are numbered row * per_row + column / SEGMENT: consecutive across the tile.
    unsigned long long k0 = (first / cols) * per_row + (first % cols) / SEGMENT;
    unsigned long long k1 = ((end - 1) / cols) * per_row + ((end - 1) % cols) / SEGMENT;
    unsigned int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (unsigned long long k = k0 + warp; k <= k1; k += WARPS) {
        unsigned long long row = k / per_row, start = row * cols;
        unsigned long long piece = (k % per_row) * SEGMENT;
        unsigned long long lo = max(start + piece, first);
        unsigned long long hi = min(start + min((unsigned long long)cols, piece + SEGMENT), end);
        float acc[MAX_BATCH];
#pragma unroll
        for (unsigned int b = 0; b < MAX_BATCH; b++) acc[b] = 0.0f;
        if (cols % 4 == 0) {
            // Every piece starts and ends on a multiple of 4 values: four weights per lane and
            // step from one raw word and one exponent word, x read as float4.
            for (unsigned long long v = lo + 4 * lane; v < hi; v += 128) {
                unsigned int raw = *(const unsigned int*)(p.raw + v);
                unsigned int e = exps[exp_slot((unsigned int)(v - first) / 4)];
                float wf[4];
#pragma unroll
                for (unsigned int j = 0; j < 4; j++)
                    wf[j] = __uint_as_float((((raw >> (8 * j + 7)) & 1) << 31) | (((e >> (8 * j)) & 255) << 23) |
                                            (((raw >> (8 * j)) & 127) << 16));
                unsigned long long col = v - start;
#pragma unroll
                for (unsigned int b = 0; b < MAX_BATCH; b++) {
                    if (b < batch) {
                        float4 xv = __ldg((const float4*)&x[b * cols + col]);
                        acc[b] += wf[0] * xv.x + wf[1] * xv.y + wf[2] * xv.z + wf[3] * xv.w;
                    }
                }
            }
        } else {
            for (unsigned long long v = lo + lane; v < hi; v += 32) {
                unsigned int w = assemble(p, p.raw[v], *exp_byte(exps, (unsigned int)(v - first)));
                float wf = __uint_as_float(w << 16);
                unsigned long long col = v - start;
#pragma unroll
                for (unsigned int b = 0; b < MAX_BATCH; b++)
                    if (b < batch) acc[b] += wf * __ldg(&x[b * cols + col]);
            }
        }
#pragma unroll
        for (unsigned int b = 0; b < MAX_BATCH; b++) {
            if (b >= batch) break;
            float s = acc[b];
            for (unsigned int d = 16; d > 0; d >>= 1) s += __shfl_xor_sync(0xffffffffu, s, d);
            if (lane == 0 && s != 0.0f) atomicAdd(&y[b * rows + row], s);
        }
    }
}

// (3) KV pages: many tiered payloads at once, one grid row per page. `pages` holds, per page,
// the Planes of that page; `out_offsets` its first output byte.
extern "C" __global__ void tiered_decode_pages(const Planes* pages, const unsigned long long* out_offsets,
                                               unsigned char* out, int* bad) {
    const Planes& p = pages[blockIdx.y];
    if ((unsigned long long)blockIdx.x * TILE >= p.n) return; // the whole block leaves together
    decode_tile(p, blockIdx.x, out + out_offsets[blockIdx.y], bad);
}
