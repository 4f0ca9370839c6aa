// glyd-gpu CUDA kernels, compiled at run time with NVRTC (see src/cuda.rs).
//
// The tiered layout (docs/FORMAT.md §8.5): tier-1 codes of w1 bits, one per value; tier-2
// codes of w2 bits, one per tier-1 escape; tier-3 exponent bytes, one per tier-2 escape; the
// verbatim sign+mantissa plane of raw_bits per value. One block of 128 threads decodes one
// tile of 4096 values in 32 rounds; a value's tier-2 and tier-3 slots come from a ballot and
// a prefix count over the block, starting where the tile index says the tile's entries start.

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

// Block-wide exclusive prefix count of `flag`; returns this thread's slot and sets *total.
__device__ __forceinline__ unsigned int block_prefix(bool flag, unsigned int* shared, unsigned int* total) {
    unsigned int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    unsigned int ballot = __ballot_sync(0xffffffffu, flag);
    unsigned int before = __popc(ballot & ((1u << lane) - 1));
    if (lane == 0) shared[warp] = __popc(ballot);
    __syncthreads();
    unsigned int offset = 0, sum = 0;
    for (unsigned int k = 0; k < WARPS; k++) {
        if (k < warp) offset += shared[k];
        sum += shared[k];
    }
    __syncthreads();
    *total = sum;
    return offset + before;
}

// Decodes value `v` of the tile whose running tier offsets are *t2, *t3 (uniform over the
// block); every thread of the block must call it. Returns the word; sets *bad on a bound error.
__device__ unsigned int decode_value(const Planes& p, unsigned long long v, unsigned int* t2, unsigned int* t3,
                                     unsigned int* shared, int* bad) {
    bool valid = v < p.n;
    unsigned int esc1 = (1u << p.w1) - 1, esc2 = (1u << p.w2) - 1;
    unsigned int c1 = valid ? get_bits(p.tier1, v, p.w1) : 0;
    bool e1 = valid && c1 == esc1;
    unsigned int total1, total2;
    unsigned int i2 = *t2 + block_prefix(e1, shared, &total1);
    unsigned int c2 = 0;
    if (e1) {
        if (i2 >= p.n2) { *bad = 1; i2 = 0; }
        c2 = get_bits(p.tier2, i2, p.w2);
    }
    bool e2 = e1 && c2 == esc2;
    unsigned int i3 = *t3 + block_prefix(e2, shared, &total2);
    *t2 += total1;
    *t3 += total2;
    unsigned int rank = e1 ? esc1 + c2 : c1;
    unsigned int exponent;
    if (e2) {
        if (i3 >= p.n3) { *bad = 1; i3 = 0; }
        exponent = p.tier3[i3];
    } else {
        if (valid && rank >= p.ranks) *bad = 1;
        exponent = p.exponents[rank & 255];
    }
    unsigned int raw = valid ? get_bits(p.raw, v, p.mantissa + 1) : 0;
    unsigned int sign = raw >> p.mantissa;
    unsigned int mant = raw & ((1u << p.mantissa) - 1);
    return (sign << (p.word_bits - 1)) | (exponent << p.mantissa) | mant;
}

// (1) Decode a tiered tensor into 16- or 32-bit words.
extern "C" __global__ void tiered_decode(Planes p, unsigned char* out, int* bad) {
    __shared__ unsigned int shared[WARPS];
    unsigned long long tile = blockIdx.x;
    unsigned int t2 = p.tiles[2 * tile], t3 = p.tiles[2 * tile + 1];
    for (unsigned int r = 0; r < TILE / THREADS; r++) {
        unsigned long long v = tile * TILE + r * THREADS + threadIdx.x;
        unsigned int w = decode_value(p, v, &t2, &t3, shared, bad);
        if (v < p.n) {
            if (p.word_bits == 16) ((unsigned short*)out)[v] = (unsigned short)w;
            else ((unsigned int*)out)[v] = w;
        }
    }
}

__device__ __forceinline__ float bf16_to_float(unsigned int w) { return __uint_as_float(w << 16); }

// (2) Fused decode + GEMV: y[b][row] += W[row][col] * x[b][col] for a tiered bf16 matrix of
// `cols` columns, batch `batch` (1..16). Each tile adds its partial sums per row: in shared
// memory when the tile's rows fit (`rows_in_tile` × batch floats), else straight to y.
extern "C" __global__ void tiered_gemv_bf16(Planes p, unsigned int cols, unsigned int batch, const float* x,
                                            float* y, unsigned int rows_in_tile, int* bad) {
    __shared__ unsigned int shared[WARPS];
    extern __shared__ float acc[];
    unsigned long long tile = blockIdx.x;
    unsigned long long row0 = tile * TILE / cols;
    bool local = rows_in_tile > 0;
    if (local) {
        for (unsigned int i = threadIdx.x; i < rows_in_tile * batch; i += THREADS) acc[i] = 0.0f;
        __syncthreads();
    }
    unsigned int t2 = p.tiles[2 * tile], t3 = p.tiles[2 * tile + 1];
    for (unsigned int r = 0; r < TILE / THREADS; r++) {
        unsigned long long v = tile * TILE + r * THREADS + threadIdx.x;
        unsigned int w = decode_value(p, v, &t2, &t3, shared, bad);
        if (v < p.n) {
            float wf = bf16_to_float(w);
            unsigned long long row = v / cols, col = v % cols;
            for (unsigned int b = 0; b < batch; b++) {
                float prod = wf * x[b * cols + col];
                if (local) atomicAdd(&acc[(row - row0) * batch + b], prod);
                else atomicAdd(&y[b * (p.n / cols) + row], prod);
            }
        }
    }
    if (local) {
        __syncthreads();
        unsigned long long rows = p.n / cols;
        for (unsigned int i = threadIdx.x; i < rows_in_tile * batch; i += THREADS) {
            unsigned long long row = row0 + i / batch;
            unsigned int b = i % batch;
            if (row < rows && acc[i] != 0.0f) atomicAdd(&y[b * rows + row], acc[i]);
        }
    }
}

// (3) KV pages: many tiered payloads at once, one grid row per page. `pages` holds, per page,
// the Planes of that page; `out_offsets` its first output byte.
extern "C" __global__ void tiered_decode_pages(const Planes* pages, const unsigned long long* out_offsets,
                                               unsigned char* out, int* bad) {
    __shared__ unsigned int shared[WARPS];
    const Planes& p = pages[blockIdx.y];
    unsigned long long tile = blockIdx.x;
    if (tile * TILE >= p.n) return; // whole block leaves together: no divergence at barriers
    unsigned int t2 = p.tiles[2 * tile], t3 = p.tiles[2 * tile + 1];
    unsigned char* o = out + out_offsets[blockIdx.y];
    for (unsigned int r = 0; r < TILE / THREADS; r++) {
        unsigned long long v = tile * TILE + r * THREADS + threadIdx.x;
        unsigned int w = decode_value(p, v, &t2, &t3, shared, bad);
        if (v < p.n) {
            if (p.word_bits == 16) ((unsigned short*)o)[v] = (unsigned short)w;
            else ((unsigned int*)o)[v] = w;
        }
    }
}
