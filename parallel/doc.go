// Package parallel runs loops on a persistent pool of worker goroutines.
//
// Design record
//
//   - What: a Pool of n-1 goroutines created once by New and reused by every
//     For until Close (the calling goroutine is the n-th worker); For splits
//     [0, n) into at most Size() contiguous ranges and waits for all of them.
//     No goroutine is spawned per call and the package holds no global
//     mutable state: each owner (a model.Context) makes its own Pool.
//   - Determinism contract: For only decides which goroutine runs which
//     range; the ranges are a pure function of (n, Size()) and cover [0, n)
//     exactly once. A caller whose f computes each index from its inputs
//     alone (as quant.MatMul does: one output per row and column, never a
//     reduction across ranges) gets bit-identical results for every pool
//     size. Nothing in the pool reorders floating-point arithmetic.
//   - Follows: the role of ggml's threadpool (persistent workers, rows split
//     between threads), not its chunking: the reference's per-row results do
//     not depend on its thread count either, so no bit depends on the split.
//   - Concurrency: For may be called from one goroutine at a time per Pool
//     (calls are serialised by a mutex); f must be safe to run concurrently
//     on disjoint ranges. A panic in f is re-raised (its value) in the caller of
//     For after every range has finished.
package parallel
