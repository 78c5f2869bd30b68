// Package parallel runs loops on a persistent pool of worker goroutines, which decides only which goroutine runs
// which chunk, never the arithmetic.
//
// # Design record
//
// What. A [Pool] of n-1 goroutines is created once by [New] and reused by every Run and For until Close (the
// calling goroutine is the n-th worker). Run hands out fixed-size chunks of [0, n) to whichever worker is free
// (an atomic counter); For splits [0, n) into at most Size() contiguous ranges (Ranges). No goroutine is spawned
// per call, Run allocates nothing (the job is an interface holding a pointer; each worker has a mailbox slot),
// and the package holds no global mutable state: each owner makes its own Pool. A worker polls its slot for
// spinRounds rounds (yielding now and then) before it parks on a channel, so the matmuls of one token, separated
// by short serial stretches, find it awake. Run's caller works through the chunks too; when none is left it
// revokes the posts no worker has taken yet (a worker the OS has not scheduled never holds a Run up) and waits
// only for the workers that are running. Run and For may be called from one goroutine at a time per Pool
// (serialised by a mutex); jobs must be safe to run concurrently on disjoint ranges. A panic in a job is
// re-raised (its value) in the caller after every worker has stopped.
//
// Follows. The role of ggml's threadpool (persistent workers that spin between ops, rows handed out in chunks),
// not its split: the reference's per-row results do not depend on its thread count either, so no bit depends on
// the split.
//
// Deliberate differences. The sizes of the chunks are bankml's own choice, not ggml's; no result depends on them.
//
// Determinism. A caller whose job computes each index from its inputs alone (as quant's MatMul does: one output
// per row and column, never a reduction across chunks) gets bit-identical results for every pool size and
// every schedule. Nothing in the pool reorders floating-point arithmetic.
package parallel
