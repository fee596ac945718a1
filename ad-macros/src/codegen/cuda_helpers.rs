//! The CUDA C device functions that generated kernels call for their adds
//! (`codegen/cuda.rs`): warp-aggregated adds at shared addresses, and block sums.

/// Warp-aggregated addition: the active lanes that add at the same address (grouped by
/// `__match_any_sync`) sum their values by a shuffle tree over their ranks in the group,
/// and the lowest lane of each group makes the one `atomicAdd`. Lanes need not be
/// converged or agree on the address: a lane alone at its address adds by itself. Where
/// every lane shares the address (a reduction into one element), 32 contended atomics
/// become one after five shuffle rounds.
///
/// The tree: at round `t` each lane still in the tree adds the value of the next lane of
/// its group above it that is still in the tree (which holds the sum of `2^t` ranks), then
/// the lanes whose rank has bit `t` set leave it. Every active lane runs every round
/// (the shuffles name all of them), until no lane has a group member left above it.
pub const UNIFORM_ADD: &str = r#"template <typename T>
__device__ __forceinline__ void phidiff_add_uniform(T* address, T value) {
    const unsigned active = __activemask();
    const unsigned group = __match_any_sync(active, (unsigned long long)address);
    const unsigned lane = threadIdx.x & 31u;
    const unsigned below = group & ((1u << lane) - 1u);
    unsigned rank = __popc(below);
    unsigned above = group & ~below & ~(1u << lane);
    while (__any_sync(active, above != 0u)) {
        const int next = __ffs(above);
        const T theirs = __shfl_sync(active, value, next > 0 ? next - 1 : (int)lane);
        if (next > 0) {
            value += theirs;
        }
        above &= __ballot_sync(active, (rank & 1u) == 0u);
        rank >>= 1;
    }
    if (below == 0u) {
        atomicAdd(address, value);
    }
}
"#;

/// The sum over a thread block, added at `address` by one `atomicAdd`: a shuffle reduction
/// in each warp, the warps' sums through shared memory, and a shuffle reduction of those in
/// the first warp. Every thread of the block calls it (the scalar adjoints, at the kernel's
/// end), so a reduction into one address costs one atomic per block instead of one per
/// warp. A block of any size works: the lanes past its end are left out of the shuffles.
pub const BLOCK_ADD: &str = r#"template <typename T>
__device__ __forceinline__ T phidiff_warp_sum(T value, unsigned lanes) {
    const unsigned lane = threadIdx.x & 31u;
    const unsigned mask = lanes >= 32u ? 0xffffffffu : (1u << lanes) - 1u;
    for (unsigned offset = 16u; offset > 0u; offset >>= 1) {
        const T other = __shfl_down_sync(mask, value, offset);
        if (lane + offset < lanes) {
            value += other;
        }
    }
    return value;
}
template <typename T>
__device__ __forceinline__ void phidiff_add_block(T* address, T value) {
    __shared__ T phidiff_warp_sums[32];
    const unsigned warp = threadIdx.x >> 5;
    const unsigned warps = (blockDim.x + 31u) >> 5;
    value = phidiff_warp_sum(value, blockDim.x - (threadIdx.x & ~31u));
    if ((threadIdx.x & 31u) == 0u) {
        phidiff_warp_sums[warp] = value;
    }
    __syncthreads();
    if (warp == 0u) {
        value = threadIdx.x < warps ? phidiff_warp_sums[threadIdx.x] : (T)0;
        value = phidiff_warp_sum(value, blockDim.x < 32u ? blockDim.x : 32u);
        if (threadIdx.x == 0u) {
            atomicAdd(address, value);
        }
    }
    __syncthreads();
}
"#;
